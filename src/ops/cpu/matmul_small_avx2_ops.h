#pragma once
// The 8-lane AVX2 arithmetic of one dot product in the small-row matmul:
// shared by its AVX2 build and its AVX-512 build, which runs two of these
// 8-lane accumulators side by side in one register and must round exactly
// as the AVX2 build does. Only for files compiled with -mavx2 -mfma.
#if defined(__x86_64__)
#include <immintrin.h>

namespace flashdraft::ops::cpu::detail {
namespace {

struct Avx2 {
  using Vec = __m256;
  static constexpr int kLanes = 8;
  // 4x3 accumulators + 3 weight vectors + 1 x vector = the 16 ymm registers.
  static constexpr int kRows = 4, kOuts = 3, kOutsOneRow = 8;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static Vec madd(Vec a, Vec b, Vec acc) { return _mm256_fmadd_ps(a, b, acc); }
  static float hsum(Vec v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float madd1(float a, float b, float s) {
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(s)));
  }
};

}  // namespace
}  // namespace flashdraft::ops::cpu::detail
#endif
