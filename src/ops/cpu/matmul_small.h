#pragma once
// Row-blocked y[n, out] = x[n, in] · w[out, in]^T (+ bias), the CPU matmul
// behind ops::cpu::matmul_wt. Unlike sgemm it packs nothing, so a decode row
// or a 16-row verify block reads each weight once; and it is batch
// invariant: a row's result is bit-identical whatever n is, whatever rows
// share the call and however many threads run it (see matmul_small_kernel.h).
#include <cstdint>

namespace flashdraft::ops::cpu {

// Splits the outputs over ops::cpu::num_threads() threads (worker_pool.h)
// when the call is big enough to pay for the hand-off.
void matmul_small(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in, int64_t out);

// Which build of the kernel this machine runs ("avx512f" (the bits of
// "avx2-fma"), "avx2-fma", "sse2" or "generic"); chosen once, at first use.
const char* matmul_small_isa();

namespace detail {
// The per-ISA builds (x86-64 only), single-threaded; y rows are ldy apart.
void matmul_small_avx2(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
                       int64_t out, int64_t ldy);
// Rounds exactly as matmul_small_avx2 (matmul_small_avx512.cpp).
void matmul_small_avx512(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
                         int64_t out, int64_t ldy);
void matmul_small_sse(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
                      int64_t out, int64_t ldy);
}  // namespace detail

}  // namespace flashdraft::ops::cpu
