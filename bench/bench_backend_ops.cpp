// Perf mode of the backend op harness (tests/backend_ops): every case of its
// table on the CUDA backend, one markdown row each: median time, effective
// bandwidth, TFLOP/s where flops are counted, and for memory-bound cases the
// fraction of the device-to-device copy bandwidth measured here first.
//
//   bench_backend_ops [--filter SUBSTR] [--reps N]
//
// Timing goes through the backend's own queue (enqueue, synchronize, host
// clock), so one sample runs the op enough times back to back (>= ~0.5 ms)
// that launch and synchronize latency wash out. Repeated runs of one case see
// its inputs warm in L2 when they fit (50 MB on an H100): such cases are
// marked "(L2)", and their fraction of the copy bandwidth may pass 100%.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "op_cases.h"
#include "ops/cuda/cuda_backend.h"

namespace {

using flashdraft::ops::Backend;
using flashdraft::ops::DType;
namespace t = flashdraft::ops::testing;

// Above this many flops per byte a case is compute-bound on an H100 or H200
// (bf16 tensor cores ~990 TFLOP/s over ~3.3-4.8 TB/s: a ridge of 200-300);
// well below it the copy bandwidth is the yardstick.
constexpr double kComputeBound = 100.0;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Median seconds of one call of `fn`, over `reps` samples after a warm-up.
template <class Fn>
double median_time(Backend& be, int reps, Fn fn) {
  for (int i = 0; i < 3; ++i) fn();
  be.synchronize();
  double t0 = now_s();
  fn();
  be.synchronize();
  const double once = std::max(now_s() - t0, 1e-7);
  const int inner = static_cast<int>(std::clamp(5e-4 / once, 1.0, 1000.0));
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    be.synchronize();
    t0 = now_s();
    for (int i = 0; i < inner; ++i) fn();
    be.synchronize();
    samples.push_back((now_s() - t0) / inner);
  }
  std::nth_element(samples.begin(), samples.begin() + reps / 2, samples.end());
  return samples[static_cast<size_t>(reps / 2)];
}

// Device-to-device copy bandwidth (bytes read + written per second) through
// the backend's copy, on buffers far larger than L2.
double copy_bandwidth(Backend& be, int reps) {
  const int64_t rows = 16384, cols = 16384;  // 512 MiB of bf16 each
  const auto src = be.alloc_tensor(DType::BF16, rows, cols), dst = be.alloc_tensor(DType::BF16, rows, cols);
  be.fill_uniform(src.t, 1, -1.0f, 1.0f);
  const double s = median_time(be, reps, [&] { be.copy(src.t, dst.t); });
  return 2.0 * static_cast<double>(rows * cols * 2) / s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter;
  int reps = 25;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) {
      filter = argv[++i];
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(20, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--filter SUBSTR] [--reps N (>= 20)]\n", argv[0]);
      return 2;
    }
  }
  try {
    auto be = flashdraft::ops::cuda::make_cuda_backend();
    int l2_bytes = 0;
    if (cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0) != cudaSuccess) l2_bytes = 0;
    const double copy_bw = copy_bandwidth(*be, reps);
    std::printf("%s; device-to-device copy: %.0f GB/s (read + write); median of %d samples\n\n", be->describe().c_str(),
                copy_bw / 1e9, reps);
    std::printf("| case | us | GB/s | %% of copy | TFLOP/s |\n|---|---:|---:|---:|---:|\n");
    for (const t::OpCase& c : t::op_cases(be->activation_dtype())) {
      if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
      const auto data = t::make_case_data(c, 1);
      auto bound = t::bind_case(c, *data, *be);
      const double s = median_time(*be, reps, [&] { bound->run(); });
      const t::Traffic tr = t::traffic(c, *be);
      const bool memory_bound = tr.flops < kComputeBound * tr.bytes;
      char pct[32] = "-", tflops[32] = "-";
      if (memory_bound)
        std::snprintf(pct, sizeof pct, "%.0f%%%s", 100.0 * tr.bytes / s / copy_bw, tr.bytes <= l2_bytes ? " (L2)" : "");
      if (tr.flops > 0) std::snprintf(tflops, sizeof tflops, "%.1f", tr.flops / s / 1e12);
      std::printf("| %s | %.1f | %.0f | %s | %s |\n", c.name.c_str(), s * 1e6, tr.bytes / s / 1e9, pct, tflops);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_backend_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}
