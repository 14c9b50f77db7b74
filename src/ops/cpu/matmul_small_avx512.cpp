// The AVX-512 build of the small-row matmul, bit for bit the AVX2 build's
// result: each 512-bit accumulator holds two rows' 8-lane AVX2 accumulators
// of one output side by side, [row 2p | row 2p + 1], fed by x rows packed in
// pairs and by each 8-float piece of a weight row broadcast to both halves.
// Every lane runs the AVX2 build's sequence of fused multiply-adds, and each
// half is summed, finished with the tail and biased by the AVX2 build's own
// code (matmul_small_avx2_ops.h): twice the multiply-adds an instruction
// without a new rounding anywhere, so machines with and without AVX-512 (and
// the CPU reference's fixtures) keep one set of bits. Single rows (decode)
// are memory-bound and go to the AVX2 build. This file alone is compiled
// with -mavx512f -mavx2 -mfma; matmul_small.cpp calls it only on CPUs with all three.
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "ops/cpu/matmul_small.h"
#include "ops/cpu/matmul_small_avx2_ops.h"

namespace flashdraft::ops::cpu::detail {
namespace {

#define FD_MM_INLINE inline __attribute__((always_inline))

// Eight floats into both halves (AVX512F's f64x4 broadcast: no AVX512DQ needed).
FD_MM_INLINE __m512 broadcast8(const float* p) {
  return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(p))));
}

// P row pairs x O outputs: P * O accumulators, O broadcast weight pieces and
// one x pair of the 32 zmm registers (4 x 6: 24 + 6 + 1). xp: pair p's 8-lane step s at
// xp + p * pair_ld + 16 s; x: the same rows unpacked (the tails), rows `in`
// apart; `rows` (1 .. 2P) of them are real.
template <int P, int O, bool Prefetch>
FD_MM_INLINE void pair_block(const float* xp, int64_t pair_ld, const float* x, const float* w, const float* bias,
                             float* y, int64_t in, int64_t ldy, int64_t rows) {
  __m512 acc[P][O];
  for (int p = 0; p < P; ++p)
    for (int o = 0; o < O; ++o) acc[p][o] = _mm512_setzero_ps();
  const int64_t kv = in - in % Avx2::kLanes;
  for (int64_t k = 0, s16 = 0; k < kv; k += Avx2::kLanes, s16 += 16) {
    __m512 wv[O];
    for (int o = 0; o < O; ++o) wv[o] = broadcast8(w + o * in + k);
    if constexpr (Prefetch)
      for (int o = 0; o < O; ++o) __builtin_prefetch(w + (O + o) * in + k);
    for (int p = 0; p < P; ++p) {
      __m512 xv = _mm512_load_ps(xp + p * pair_ld + s16);
      // One load per x pair, held in a register: folded into each of its O
      // multiply-adds instead (GCC's choice) it cost the loop O loads.
      asm("" : "+v"(xv));
      for (int o = 0; o < O; ++o) acc[p][o] = _mm512_fmadd_ps(xv, wv[o], acc[p][o]);
    }
  }
  for (int p = 0; p < P; ++p)
    for (int half = 0; half < 2; ++half) {
      const int64_t r = 2 * p + half;
      if (r >= rows) break;
      for (int o = 0; o < O; ++o) {
        const __m256 lanes = half == 0 ? _mm512_castps512_ps256(acc[p][o])
                                       : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[p][o]), 1));
        float s = Avx2::hsum(lanes);
        for (int64_t k = kv; k < in; ++k) s = Avx2::madd1(x[r * in + k], w[o * in + k], s);
        if (bias != nullptr) s += bias[o];
        y[r * ldy + o] = s;
      }
    }
}

// Block shape; -DFD_PAIRS=.. -DFD_OUTS=.. for sweeps. One core of the Zen 5
// VM, ten calls of 5-16 rows at the shipped pair's shapes, mean GFLOP/s
// (2026-11-29): 4 x 6 152, 4 x 5 149, 8 x 3 148, 6 x 4 123.
#ifndef FD_PAIRS
#define FD_PAIRS 4
#define FD_OUTS 6
#endif
constexpr int kPairs = FD_PAIRS, kOuts = FD_OUTS;

// Row pairs of one output group in blocks of kPairs, the last block smaller;
// the first block also pulls the next group's weight rows towards L1.
template <int O, bool Prefetch>
FD_MM_INLINE void output_group(const float* xp, int64_t pair_ld, const float* x, const float* w, const float* bias,
                               float* y, int64_t rows, int64_t in, int64_t ldy) {
  const int64_t pairs = (rows + 1) / 2;
  for (int64_t p = 0; p < pairs;) {
    const int64_t r = 2 * p, left = pairs - p;
    const float* xpp = xp + p * pair_ld;
    const float* xr = x + r * in;
    float* yr = y + r * ldy;
    auto run = [&]<int P>() {
      if (Prefetch && p == 0)
        pair_block<P, O, true>(xpp, pair_ld, xr, w, bias, yr, in, ldy, rows - r);
      else
        pair_block<P, O, false>(xpp, pair_ld, xr, w, bias, yr, in, ldy, rows - r);
      p += P;
    };
    if (left >= kPairs) run.template operator()<kPairs>();
    else if (left >= 4) run.template operator()<4>();
    else if (left == 3) run.template operator()<3>();
    else if (left == 2) run.template operator()<2>();
    else run.template operator()<1>();
  }
}

#undef FD_MM_INLINE

}  // namespace

void matmul_small_avx512(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
                         int64_t out, int64_t ldy) {
  if (n < 2 || in < Avx2::kLanes) return matmul_small_avx2(x, w, bias, y, n, in, out, ldy);
  // Rows in chunks whose packed x stays in L2 while the weights stream past
  // once per chunk (as the AVX2 build's chunks).
  const int64_t chunk = std::max<int64_t>(2 * kPairs, (int64_t{1} << 16) / in / (2 * kPairs) * (2 * kPairs));
  const int64_t kv = in - in % Avx2::kLanes;
  const int64_t pair_ld = 2 * kv;
  struct alignas(64) Slot {
    float v[16];
  };
  thread_local std::vector<Slot> packed;
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    const int64_t rows = std::min(chunk, n - r0);
    const float* xc = x + r0 * in;
    float* yc = y + r0 * ldy;
    const int64_t pairs = (rows + 1) / 2;
    packed.resize(static_cast<size_t>(pairs * kv / Avx2::kLanes));
    auto* xp = reinterpret_cast<float*>(packed.data());
    for (int64_t p = 0; p < pairs; ++p)
      for (int64_t k = 0; k < kv; k += Avx2::kLanes) {
        const __m256 lo = _mm256_loadu_ps(xc + 2 * p * in + k);
        const __m256 hi = 2 * p + 1 < rows ? _mm256_loadu_ps(xc + (2 * p + 1) * in + k) : _mm256_setzero_ps();
        _mm512_store_ps(xp + p * pair_ld + 2 * k,
                        _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)),
                                                            _mm256_castps_pd(hi), 1)));
      }
    int64_t o = 0;
    for (; o + kOuts <= out; o += kOuts)
      output_group<kOuts, true>(xp, pair_ld, xc, w + o * in, bias ? bias + o : nullptr, yc + o, rows, in, ldy);
    for (; o < out; ++o)
      output_group<1, false>(xp, pair_ld, xc, w + o * in, bias ? bias + o : nullptr, yc + o, rows, in, ldy);
  }
}

}  // namespace flashdraft::ops::cpu::detail
#endif
