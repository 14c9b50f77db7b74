#pragma once
// CK(call): a CUDA runtime call that must succeed, else the error, the call
// and where it was, and exit 1. For the CUDA programs in bench/
// (bench_attention.cu, gemm_proto.cu, pdl_chain_probe.cu, kv_layout_probe.cu,
// persistent_step_probe.cu).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                              \
  do {                                                                                                     \
    cudaError_t e_ = (x);                                                                                  \
    if (e_ != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); \
      std::exit(1);                                                                                        \
    }                                                                                                      \
  } while (0)
