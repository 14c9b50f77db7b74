// What does one dependency between two kernels of a replayed graph cost, and
// would a flag handoff be cheaper than programmatic dependent launch's
// griddepcontrol.wait? (The decode step is a chain of ~10 kernels a layer
// whose short kernels each add 3-6 us at batch 1: bench/gemm_notes.md.)
//
// A chain of `links` kernels, recorded in one graph and replayed; each CTA
// reads 4 bytes a thread that the kernel before wrote (from L2) and writes
// its own, so every element goes through every link and the result checks
// the ordering: out == links everywhere. Three handoffs:
//   stream : plain stream order (no programmatic launch);
//   pdl    : launch_dependents at the start, griddepcontrol.wait before the
//            read (what the engine's kernels do);
//   flag   : launch_dependents at the start, no griddepcontrol.wait: thread 0
//            polls the kernel before's counter (ld.acquire.gpu) until all its
//            CTAs have signalled; each CTA signals after its stores
//            (bar.sync, then fence + atomicAdd by thread 0). Counters are
//            zeroed by a memset node at the graph's start.
// CTA counts per link cycle through a list (--ctas 1,384 mimics norm -> GEMM).
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/pdl_chain_probe.cu -o pdl_chain_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_check.h"

enum Mode { kStream = 0, kPdl = 1, kFlag = 2 };
constexpr int kThreads = 256;

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Elements [0, n) are spread over the CTAs of every link the same way
// (grid-stride), so each goes through every link whatever the CTA count.
template <int MODE>
__global__ void __launch_bounds__(kThreads) link(const float* in, float* out, int n, unsigned* flags, int k,
                                                 unsigned expect_prev) {
  if constexpr (MODE != kStream) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if constexpr (MODE == kPdl) asm volatile("griddepcontrol.wait;\n" ::: "memory");
  if constexpr (MODE == kFlag) {
    if (k > 0) {
      if (threadIdx.x == 0)
        while (ld_acquire(&flags[k - 1]) < expect_prev) {
        }
      __syncthreads();
    }
  }
  for (int i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) out[i] = in[i] + 1.f;
  if constexpr (MODE == kFlag) {
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicAdd(&flags[k], 1u);
    }
  }
}

int main(int argc, char** argv) {
  int links = 200, reps = 20, n = 1 << 16;
  std::vector<int> ctas_list{1};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--links" && i + 1 < argc) links = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--elems" && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (a == "--ctas" && i + 1 < argc) {
      ctas_list.clear();
      for (char* s = argv[++i]; *s;) {
        ctas_list.push_back(std::strtol(s, &s, 10));
        if (*s == ',') ++s;
      }
    } else {
      std::fprintf(stderr, "usage: pdl_chain_probe [--links N] [--reps N] [--elems N] [--ctas a,b,...]\n");
      return 2;
    }
  }
  float *a, *b;
  unsigned* flags;
  CK(cudaMalloc(&a, n * sizeof(float)));
  CK(cudaMalloc(&b, n * sizeof(float)));
  CK(cudaMalloc(&flags, links * sizeof(unsigned)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  const char* names[] = {"stream", "pdl", "flag"};
  std::printf("ctas per link:");
  for (int c : ctas_list) std::printf(" %d", c);
  std::printf("; %d links, %d elements\n", links, n);
  for (int mode = 0; mode < 3; ++mode) {
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaMemsetAsync(a, 0, n * sizeof(float), s));
    CK(cudaMemsetAsync(flags, 0, links * sizeof(unsigned), s));
    for (int k = 0; k < links; ++k) {
      const int c = ctas_list[k % ctas_list.size()];
      const unsigned prev = k > 0 ? ctas_list[(k - 1) % ctas_list.size()] : 0;
      cudaLaunchConfig_t cfg{};
      cfg.gridDim = dim3(c);
      cfg.blockDim = dim3(kThreads);
      cfg.stream = s;
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr.val.programmaticStreamSerializationAllowed = 1;
      if (mode != kStream && k > 0) {
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
      }
      const float* in = k % 2 == 0 ? a : b;
      float* out = k % 2 == 0 ? b : a;
      if (mode == kStream) CK(cudaLaunchKernelEx(&cfg, link<kStream>, in, out, n, flags, k, prev));
      if (mode == kPdl) CK(cudaLaunchKernelEx(&cfg, link<kPdl>, in, out, n, flags, k, prev));
      if (mode == kFlag) CK(cudaLaunchKernelEx(&cfg, link<kFlag>, in, out, n, flags, k, prev));
    }
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));  // warm-up
    CK(cudaStreamSynchronize(s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ms(reps);
    for (int r = 0; r < reps; ++r) {
      CK(cudaEventRecord(e0, s));
      CK(cudaGraphLaunch(ge, s));
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    std::vector<float> host(n);
    CK(cudaMemcpy(host.data(), links % 2 == 0 ? a : b, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (float v : host) bad += v != static_cast<float>(links);
    std::sort(ms.begin(), ms.end());
    std::printf("%-6s median %8.1f us per graph, %5.2f us per link, %d of %d elements wrong\n", names[mode],
                1e3 * ms[reps / 2], 1e3 * ms[reps / 2] / links, bad, n);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
  }
  return 0;
}
