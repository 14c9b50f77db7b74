#pragma once
// The key of a sharded argmax (Backend::argmax_key), the same on every
// backend: a row's best (value, global index) packed into a little-endian
// u64 whose smallest value over the vocabulary shards is the unsharded
// argmax: the high word decreases as the value grows, the low word is the
// index, so the larger value wins and, on equal values, the lower index.
// A communicator's min all-reduce then combines the shards without their
// logits, and word 0 of the result is the token.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FD_KEY_FN __host__ __device__ __forceinline__
#else
#define FD_KEY_FN inline
#endif

namespace flashdraft::ops::argmax_key {

// Larger floats give smaller words, equal floats equal words (-0 and +0);
// -inf the largest but NaN's, which lose to every number as they never win
// the reference's strict > scan.
FD_KEY_FN uint32_t high_word(float v) {
  uint32_t u;
#if defined(__CUDA_ARCH__)
  u = __float_as_uint(v);
#else
  std::memcpy(&u, &v, sizeof u);
#endif
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;  // NaN
  if (u == 0x80000000u) u = 0;  // -0 == +0, as the reference's > compares them
  const uint32_t ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // increases with v
  return 0xfffffffeu - ordered;  // never 0xffffffff (NaN's); ordered >= 0x007fffff
}

}  // namespace flashdraft::ops::argmax_key
