// Perf mode of the backend op harness (tests/backend_ops): every case of its
// table on the CUDA backend, one markdown row each: median time, effective
// bandwidth, TFLOP/s where flops are counted, and for memory-bound cases the
// fraction of the device-to-device copy bandwidth measured here first. Then
// (--gemm: only then) the forward path's GEMM at Qwen3-8B's shapes against
// cuBLASLt (the former path: one algorithm per weight shape), weights rotated
// among copies that together exceed L2 so that every call reads HBM.
//
//   bench_backend_ops [--filter SUBSTR] [--reps N] [--gemm]
//
// Timing goes through the backend's own queue (enqueue, synchronize, host
// clock), so one sample runs the op enough times back to back (>= ~0.5 ms)
// that launch and synchronize latency wash out. Repeated runs of one case see
// its inputs warm in L2 when they fit (50 MB on an H100): such cases are
// marked "(L2)", and their fraction of the copy bandwidth may pass 100%.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "op_cases.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/device.h"
#include "ops/cuda/matmul_cublaslt.h"

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

// Median seconds of one call of `fn`, `sync` waiting for its queue.
template <class Fn, class Sync>
double median_time_on(Sync sync, int reps, Fn fn) {
  for (int i = 0; i < 3; ++i) fn(i);
  sync();
  std::vector<double> samples;
  int call = 3;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    for (int i = 0; i < 20; ++i) fn(call++);
    sync();
    samples.push_back((now_s() - t0) / 20);
  }
  std::nth_element(samples.begin(), samples.begin() + reps / 2, samples.end());
  return samples[static_cast<size_t>(reps / 2)];
}

// Qwen3-8B's GEMMs (and its DFlash drafter's fc) at decode, verify and prefill row counts.
void gemm_table(Backend& be, double copy_bw, int reps) {
  using flashdraft::ops::Tensor;
  struct Shape {
    const char* name;
    int64_t out, in;
    bool f32;
  };
  const Shape shapes[] = {{"qkv", 6144, 4096, false},  {"o", 4096, 4096, false},         {"gate_up", 24576, 4096, false},
                          {"down", 4096, 12288, false}, {"lm_head", 151936, 4096, true}, {"drafter fc", 4096, 20480, false}};
  flashdraft::ops::cuda::CublasLtMatmul lt(64u << 20);
  cudaStream_t stream = nullptr;
  flashdraft::ops::cuda::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const auto lt_sync = [&] { flashdraft::ops::cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); };
  std::printf("\n| GEMM (out x in) | rows | ours us | GB/s | %% of copy | TFLOP/s | cuBLASLt us | GB/s | %% of copy | TFLOP/s |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Shape& sh : shapes) {
    const double wbytes = 2.0 * static_cast<double>(sh.out * sh.in);
    const int copies = static_cast<int>(std::max(1.0, std::ceil(256e6 / wbytes)));
    std::vector<flashdraft::ops::OwnedTensor> ws;
    for (int c = 0; c < copies; ++c) {
      ws.push_back(be.alloc_tensor(DType::BF16, sh.out, sh.in));
      be.fill_uniform(ws.back().t, 100 + c, -0.03f, 0.03f);
    }
    for (int64_t m : {int64_t{1}, int64_t{16}, int64_t{2048}}) {
      if (m == 2048 && sh.f32) continue;  // the head never sees a prefill chunk
      const auto x = be.alloc_tensor(DType::BF16, m, sh.in);
      const auto y = be.alloc_tensor(sh.f32 ? DType::F32 : DType::BF16, m, sh.out);
      be.fill_uniform(x.t, 7, -1.0f, 1.0f);
      const Tensor& X = x.t;
      const Tensor& Y = y.t;
      const double ours = median_time_on([&] { be.synchronize(); }, reps,
                                         [&](int i) { be.matmul(X, ws[i % copies].t, nullptr, Y); });
      be.synchronize();
      const double peer =
          median_time_on(lt_sync, reps, [&](int i) { lt.run(X, ws[i % copies].t, nullptr, Y, stream); });
      const double bytes = wbytes + 2.0 * m * sh.in + (sh.f32 ? 4.0 : 2.0) * m * sh.out;
      const double flops = 2.0 * m * sh.in * sh.out;
      std::printf("| %s (%lldx%lld) | %lld | %.1f | %.0f | %.0f%% | %.1f | %.1f | %.0f | %.0f%% | %.1f |\n", sh.name,
                  static_cast<long long>(sh.out), static_cast<long long>(sh.in), static_cast<long long>(m), ours * 1e6,
                  bytes / ours / 1e9, 100.0 * bytes / ours / copy_bw, flops / ours / 1e12, peer * 1e6,
                  bytes / peer / 1e9, 100.0 * bytes / peer / copy_bw, flops / peer / 1e12);
      std::fflush(stdout);
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter;
  int reps = 25;
  bool gemm_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) {
      filter = argv[++i];
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(20, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--gemm")) {
      gemm_only = true;
    } else {
      std::fprintf(stderr, "usage: %s [--filter SUBSTR] [--reps N (>= 20)] [--gemm]\n", argv[0]);
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
    if (gemm_only) {
      gemm_table(*be, copy_bw, reps);
      return 0;
    }
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
    if (filter.empty()) gemm_table(*be, copy_bw, reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_backend_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}
