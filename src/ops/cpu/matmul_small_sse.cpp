// The baseline x86-64 (SSE2) build of the small-row matmul: no FMA, so each
// step is a multiply then an add, always in that order.
#if defined(__x86_64__)
#include <emmintrin.h>

#include "ops/cpu/matmul_small.h"
#include "ops/cpu/matmul_small_kernel.h"

namespace flashdraft::ops::cpu::detail {
namespace {

struct Sse {
  using Vec = __m128;
  static constexpr int kLanes = 4;
  // 4x2 accumulators + 2 weight vectors + x and a product fit 16 xmm registers.
  static constexpr int kRows = 4, kOuts = 2, kOutsOneRow = 8;
  static Vec zero() { return _mm_setzero_ps(); }
  static Vec load(const float* p) { return _mm_loadu_ps(p); }
  static Vec madd(Vec a, Vec b, Vec acc) { return _mm_add_ps(acc, _mm_mul_ps(a, b)); }
  static float hsum(Vec v) {
    __m128 s = _mm_add_ps(v, _mm_movehl_ps(v, v));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static float madd1(float a, float b, float s) {
    return _mm_cvtss_f32(_mm_add_ss(_mm_set_ss(s), _mm_mul_ss(_mm_set_ss(a), _mm_set_ss(b))));
  }
};

}  // namespace

void matmul_small_sse(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
                      int64_t out, int64_t ldy) {
  matmul_rows<Sse>(x, w, bias, y, n, in, out, ldy);
}

}  // namespace flashdraft::ops::cpu::detail
#endif
