#pragma once
// CK(call): a CUDA runtime call that must succeed, else the error, the call
// and where it was, and exit 1; and the copy bandwidth their floors divide
// by. For the CUDA programs in bench/ (bench_attention.cu, gemm_proto.cu,
// pdl_chain_probe.cu, kv_layout_probe.cu, persistent_step_probe.cu).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                              \
  do {                                                                                                     \
    cudaError_t e_ = (x);                                                                                  \
    if (e_ != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); \
      std::exit(1);                                                                                        \
    }                                                                                                      \
  } while (0)

// Bytes per second of a 1 GiB device-to-device copy, read + write counted
// (the runtime-API twin of bench/step_floor.h's copy_bandwidth): the median
// of 10 copies after 3 warm-up ones.
inline double measure_copy_bandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *s = nullptr, *d = nullptr;
  CK(cudaMalloc(&s, bytes));
  CK(cudaMalloc(&d, bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int r = 0; r < 13; ++r) {
    CK(cudaEventRecord(e0));
    CK(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 3) t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(s));
  CK(cudaFree(d));
  return 2.0 * bytes / (0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]) * 1e-3);
}
