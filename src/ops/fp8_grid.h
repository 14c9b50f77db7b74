#pragma once
// The fp8 grid a quantized drafter's weights are rounded to (the
// speculative config's "quantization": "fp8"), one definition for every
// backend: the CPU backend keeps the rounded values in f32, the CUDA backend
// in bf16 (exact: an fp8 value has 3 mantissa bits) and also as one fp8 byte
// each, which its 16-row weight streamer reads at half the bytes and widens
// to exactly those bf16 values (gemm_tiles.cu). So every backend and every
// GEMM path multiplies by the same numbers.
//
// Each weight row gets a power-of-two scale 2^e, e the least exponent with
// max|w| * 2^-e <= 448 (e4m3's largest value), clamped to [kMinExp, kMaxExp];
// w * 2^-e is then rounded to the nearest e4m3 normal (3 mantissa bits,
// ties to even) or to zero: below the smallest normal 2^-6 only 2^-6 (above
// 2^-7) and 0 are kept, not e4m3's subnormals, and f32 subnormal weights
// count as 0. Why these choices: a power of two moves only the exponent, so
// the widening is exact and needs no multiply after the dot product; with
// normals only, a code's bits shifted into a bf16 are that value times
// 2^-120, and one bf16 multiply by 2^(120 + e) finishes the widening.
// Measured on the shipped pair (CPU, 164 HumanEval prompts, 15 drafts a
// step): tau 4.40 -> 4.39 (drafter-full) and 4.46 -> 4.44 (drafter-swa);
// outputs identical, as they must be.
//
// Everything is integer work on the f32 bits, so host and device agree to
// the bit whatever their floating-point modes.
#include <cstdint>

#include "ops/float_bits.h"

#if defined(__CUDACC__)
#define FD_FP8_FN __host__ __device__ __forceinline__
#else
#define FD_FP8_FN inline
#endif

namespace flashdraft::ops::fp8 {

// The scale exponent's range: 2^(e - 6), the smallest nonzero value, stays a
// normal float and bf16 (e >= -120), and 2^(120 + e), the widening's
// multiplier, a finite bf16 (e <= 7; rows up to 448 * 2^7 = 57344, larger
// values saturate there).
constexpr int kMinExp = -120, kMaxExp = 7;

// |v|'s bits, subnormals (and zero) as 0.
FD_FP8_FN uint32_t magnitude(float v) {
  const uint32_t a = float_to_bits(v) & 0x7fffffffu;
  return (a >> 23) == 0 ? 0u : a;
}

// The row's scale exponent from its largest magnitude (magnitude()'s bits).
FD_FP8_FN int row_exponent(uint32_t absmax_bits) {
  if (absmax_bits == 0) return 0;  // an all-zero row: any scale
  const int E = static_cast<int>(absmax_bits >> 23) - 127;
  // absmax = 1.m * 2^E <= 1.75 * 2^(8 + e)  <=>  e >= E - 8 (1.m <= 1.75) or E - 7.
  int e = (absmax_bits & 0x7fffffu) <= 0x600000u ? E - 8 : E - 7;
  e = e < kMinExp ? kMinExp : e;
  return e > kMaxExp ? kMaxExp : e;
}

// The code (sign, 4 exponent bits biased by 7, 3 mantissa bits; 0x00 for
// zero, never a subnormal, 0x80 or NaN) of w on the grid of scale 2^e.
FD_FP8_FN uint8_t encode(float w, int e) {
  const uint32_t a = magnitude(w);
  if (a == 0) return 0;
  const uint32_t sign = (float_to_bits(w) >> 31) << 7;
  // |w| * 2^-e by the exponent field (a normal float: |w| <= 448 * 2^e
  // unless e was clamped, and tiny results are caught below).
  const int exp_q = static_cast<int>(a >> 23) - e;
  if (exp_q >= 127 + 9 || (exp_q >= 1 && ((static_cast<uint32_t>(exp_q) << 23) | (a & 0x7fffffu)) >= 0x43e00000u))
    return static_cast<uint8_t>(sign | 0x7eu);  // >= 448: saturate
  if (exp_q < 127 - 6) {
    // Below 2^-6: 2^-6 above 2^-7, else 0 (2^-7 itself is the tie, to the even 0).
    const bool up = exp_q == 127 - 7 && (a & 0x7fffffu) != 0;
    return up ? static_cast<uint8_t>(sign | 0x08u) : 0;
  }
  const uint32_t q = (static_cast<uint32_t>(exp_q) << 23) | (a & 0x7fffffu);
  const uint32_t r = (q + 0x7ffffu + ((q >> 20) & 1u)) & ~0xfffffu;  // 3 mantissa bits, ties to even
  const uint32_t E = (r >> 23) - 127 + 7, m = (r >> 20) & 7u;     // r <= 448: E <= 15
  return static_cast<uint8_t>(sign | (E << 3) | m);
}

// The value of `code` on the grid of scale 2^e (exact in f32 and in bf16).
FD_FP8_FN float decode(uint8_t code, int e) {
  if ((code & 0x7fu) == 0) return 0.0f;
  const uint32_t sign = static_cast<uint32_t>(code >> 7) << 31;
  const int E = static_cast<int>((code >> 3) & 15u) - 7 + e;
  return bits_to_float(sign | (static_cast<uint32_t>(E + 127) << 23) | (static_cast<uint32_t>(code & 7u) << 20));
}

// w rounded to the grid of scale 2^e.
FD_FP8_FN float round(float w, int e) { return decode(encode(w, e), e); }

}  // namespace flashdraft::ops::fp8
