#pragma once
// The arithmetic of the sample and accept ops (ops/backend.h) that every
// backend must do bit for bit alike, written once for host and device code:
// the counter-based random numbers and the per-token weights. With identical
// weights, the CPU reference and a GPU kernel can differ only in the order
// they add doubles (see Backend::sample).
//
// Host code that includes this must be compiled without floating-point
// contraction (-ffp-contract=off): a fused multiply-add rounds once where
// the device's __fmul_rn/__fadd_rn round twice.
#include <cstdint>

#include "ops/float_bits.h"

#if defined(__CUDACC__)
#define FD_SAMPLE_FN __host__ __device__ __forceinline__
#else
#define FD_SAMPLE_FN inline
#endif

namespace flashdraft::ops::sample_math {

// ---- Randomness: Philox4x32-10 (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC 2011), checked against Random123's published
// known-answer vectors in tests/ops/sample_test.cpp.

struct Philox4x32 {
  uint32_t v[4];
};

FD_SAMPLE_FN void mul_hi_lo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

FD_SAMPLE_FN Philox4x32 philox4x32_10(Philox4x32 ctr, uint32_t key0, uint32_t key1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mul_hi_lo(0xD2511F53u, ctr.v[0], hi0, lo0);
    mul_hi_lo(0xCD9E8D57u, ctr.v[2], hi1, lo1);
    ctr = Philox4x32{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  return ctr;
}

// The uniform double in [0, 1) of draw `draw` for the token at `position`
// of the request seeded with `seed`: Philox4x32-10 with key = the seed's
// (low, high) words and counter = (position, draw, 0, 0); the first two
// output words, high word first, give 53 bits. A pure function of its
// arguments: no state, so it does not matter which batch, step or backend
// asks for it.
FD_SAMPLE_FN double uniform(uint64_t seed, uint32_t position, uint32_t draw) {
  const Philox4x32 r =
      philox4x32_10(Philox4x32{{position, draw, 0u, 0u}}, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32 | r.v[1]) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

// ---- Weights. IEEE single operations with round-to-nearest only, spelled
// as intrinsics on the device so that nvcc cannot contract them.

FD_SAMPLE_FN float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

FD_SAMPLE_FN float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

FD_SAMPLE_FN float reciprocal(float x) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(1.0f, x);
#else
  return 1.0f / x;
#endif
}

FD_SAMPLE_FN float floor_f(float x) {
#if defined(__CUDA_ARCH__)
  return floorf(x);
#else
  return __builtin_floorf(x);
#endif
}

using ops::bits_to_float;  // ops/float_bits.h
using ops::float_to_bits;

// exp(x) for x <= 0, within a few ulps, and exactly 1 at 0. Below -87
// (exp < 1.7e-38, i.e. under 2^-126 of the top token's weight) it is 0:
// such tokens are never sampled. -inf and NaN also give 0.
//   x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two, Cody-Waite, so
//   n * ln2_hi is exact), exp(r) by its Taylor series to r^7 (truncation
//   < 6e-9), times 2^n built from the exponent bits.
FD_SAMPLE_FN float exp_nonpositive(float x) {
  if (!(x >= -87.0f)) return 0.0f;
  // Constants as exact float bit patterns: log2(e), ln2 = 0x1.63p-1 -
  // 0x1.bd0106p-13, 1/7! .. 1/3!.
  const float n = floor_f(add_rn(mul_rn(x, 0x1.715476p+0f), 0.5f));
  const float r = add_rn(add_rn(x, mul_rn(n, -0x1.63p-1f)), mul_rn(n, 0x1.bd0106p-13f));
  float p = 0x1.a01a02p-13f;
  p = add_rn(mul_rn(p, r), 0x1.6c16c2p-10f);
  p = add_rn(mul_rn(p, r), 0x1.111112p-7f);
  p = add_rn(mul_rn(p, r), 0x1.555556p-5f);
  p = add_rn(mul_rn(p, r), 0x1.555556p-3f);
  p = add_rn(mul_rn(p, r), 0.5f);
  p = add_rn(mul_rn(p, r), 1.0f);
  p = add_rn(mul_rn(p, r), 1.0f);
  return mul_rn(p, bits_to_float(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23));
}

// A token's unnormalised probability: exp((logit - max) / temperature),
// given inv_t = reciprocal(temperature). The row's maximum gets exactly 1.
FD_SAMPLE_FN float weight(float logit, float max, float inv_t) {
  const float d = add_rn(logit, -max);
  return d == 0.0f ? 1.0f : exp_nonpositive(mul_rn(d, inv_t));
}

// An unsigned key ordered like the float (-0 and +0 are one key), so that a
// threshold search over keys is one over values.
FD_SAMPLE_FN uint32_t order_key(float v) {
  uint32_t u = float_to_bits(v);
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

FD_SAMPLE_FN float key_value(uint32_t key) {
  return bits_to_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

}  // namespace flashdraft::ops::sample_math
