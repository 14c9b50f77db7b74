// The AVX2+FMA build of the small-row matmul; this file alone is compiled
// with -mavx2 -mfma, and matmul_small.cpp only calls it on CPUs that have both.
#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/cpu/matmul_small.h"
#include "ops/cpu/matmul_small_avx2_ops.h"
#include "ops/cpu/matmul_small_kernel.h"

namespace flashdraft::ops::cpu::detail {

void matmul_small_avx2(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
                       int64_t out, int64_t ldy) {
  matmul_rows<Avx2>(x, w, bias, y, n, in, out, ldy);
}

}  // namespace flashdraft::ops::cpu::detail
#endif
