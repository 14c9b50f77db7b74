#pragma once
// A float's bits and back, the same on the host and in device code (the
// samplers' order keys, the fp8 grid's rounding).
#include <cstdint>

#if defined(__CUDACC__)
#define FD_BITS_FN __host__ __device__ __forceinline__
#else
#define FD_BITS_FN inline
#endif

namespace flashdraft::ops {

FD_BITS_FN float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
#endif
}

FD_BITS_FN uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
#endif
}

}  // namespace flashdraft::ops
