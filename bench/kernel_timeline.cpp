// A kernel timeline for any CUDA program, through CUPTI's activity API:
// every kernel's start and end on the GPU clock, with the graph it was
// replayed from and the launch it belongs to (a cudaGraphLaunch's kernels
// share its correlation id). bench/kernel_gaps.py turns it into GPU idle time
// between kernels per step. Built as a shared library and injected, so the
// program itself carries no profiling code:
//
//   CUDA_INJECTION64_PATH=build-gpu/bench/libkernel_timeline.so FD_TIMELINE=t.csv prog ...
//
// (Nsight Systems would do this, but the lent GPU machine cannot turn its
// captures into reports.)
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct KernelSpan {
  uint64_t start, end;
  uint32_t graph_id, correlation_id;
  std::string grid;  // "x.y.z": tells apart launches of one kernel at different shapes
  std::string name;
};

std::mutex g_mutex;
std::vector<KernelSpan> g_spans;
constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    const std::string grid =
        std::to_string(k->gridX) + "." + std::to_string(k->gridY) + "." + std::to_string(k->gridZ);
    g_spans.push_back({k->start, k->end, k->graphId, k->correlationId, grid, k->name ? k->name : "?"});
  }
  std::free(buffer);
}

void write_timeline() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char* path = std::getenv("FD_TIMELINE");
  std::FILE* f = std::fopen(path && *path ? path : "kernel_timeline.csv", "w");
  if (!f) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(f, "start_ns,end_ns,graph_id,correlation_id,grid,name\n");
  for (const KernelSpan& s : g_spans)
    std::fprintf(f, "%llu,%llu,%u,%u,%s,%s\n", static_cast<unsigned long long>(s.start),
                 static_cast<unsigned long long>(s.end), s.graph_id, s.correlation_id, s.grid.c_str(),
                 s.name.c_str());
  std::fclose(f);
  std::fprintf(stderr, "kernel_timeline: %zu kernels written\n", g_spans.size());
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library.
extern "C" int InitializeInjection() {
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "kernel_timeline: CUPTI activity tracing could not start\n");
    return 0;
  }
  std::atexit(write_timeline);
  return 1;
}
