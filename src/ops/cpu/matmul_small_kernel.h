#pragma once
// The row-blocked kernel behind matmul_small, instantiated once per ISA
// (matmul_small_avx2.cpp, matmul_small_sse.cpp). Everything here has internal
// linkage: the two instantiating files are built with different -m flags.
//
// Batch invariance: every (row, output) dot product runs the same instruction
// sequence wherever it sits in a register block (and whatever n is): one
// vector accumulator over the k-steps in order, a fixed horizontal sum, the
// tail elements in order, then the bias. Register blocks only interleave
// independent dot products, they never share or split one.
#include <algorithm>
#include <cstdint>

namespace flashdraft::ops::cpu {
namespace {

#define FD_MM_INLINE inline __attribute__((always_inline))

// V provides: using Vec; kLanes; zero(); load(p); madd(a, b, acc) = acc + a*b
// (fused or not, but always the same); hsum(acc); madd1(a, b, s) for scalars.
// R rows x O outputs of y (rows ldy floats apart); rows of x and w are `in`
// floats apart.
// Prefetch: also pull the next O weight rows towards L1 (the first pass over
// an output group, when its weights come from L3 or memory).
template <class V, int R, int O, bool Prefetch = false>
FD_MM_INLINE void block(const float* x, const float* w, const float* bias, float* y, int64_t in, int64_t ldy) {
  typename V::Vec acc[R][O];
  for (int r = 0; r < R; ++r)
    for (int o = 0; o < O; ++o) acc[r][o] = V::zero();
  const int64_t kv = in - in % V::kLanes;
  for (int64_t k = 0; k < kv; k += V::kLanes) {
    typename V::Vec wv[O];
    for (int o = 0; o < O; ++o) wv[o] = V::load(w + o * in + k);
    if constexpr (Prefetch)
      for (int o = 0; o < O; ++o) __builtin_prefetch(w + (O + o) * in + k);
    for (int r = 0; r < R; ++r) {
      const typename V::Vec xv = V::load(x + r * in + k);
      for (int o = 0; o < O; ++o) acc[r][o] = V::madd(xv, wv[o], acc[r][o]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int o = 0; o < O; ++o) {
      float s = V::hsum(acc[r][o]);
      for (int64_t k = kv; k < in; ++k) s = V::madd1(x[r * in + k], w[o * in + k], s);
      if (bias != nullptr) s += bias[o];
      y[r * ldy + o] = s;
    }
}

// Rows are taken in chunks small enough to stay in L2 while every weight row
// streams past once per chunk; inside a chunk, for each group of O outputs
// (a few KB of weights, held in L1) the rows go by in blocks of V::kRows.
// Chunks of fewer than kRows rows use wider output groups so that enough
// independent accumulators hide the multiply-add latency.
template <class V>
void matmul_rows(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in, int64_t out,
                 int64_t ldy) {
  constexpr int R = V::kRows, O = V::kOuts;
  const int64_t chunk = std::max<int64_t>(R, (int64_t{1} << 16) / std::max<int64_t>(in, 1) / R * R);
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    const int64_t rows = std::min(chunk, n - r0);
    const float* xc = x + r0 * in;
    float* yc = y + r0 * ldy;
    if (rows < R) {
      // Few rows (decoding): one row at a time against a wide output group.
      constexpr int O1 = V::kOutsOneRow;
      int64_t o = 0;
      for (; o + O1 <= out; o += O1) {
        const float* wo = w + o * in;
        const float* bo = bias ? bias + o : nullptr;
        block<V, 1, O1, true>(xc, wo, bo, yc + o, in, ldy);
        for (int64_t r = 1; r < rows; ++r) block<V, 1, O1>(xc + r * in, wo, bo, yc + r * ldy + o, in, ldy);
      }
      for (; o < out; ++o)
        for (int64_t r = 0; r < rows; ++r)
          block<V, 1, 1>(xc + r * in, w + o * in, bias ? bias + o : nullptr, yc + r * ldy + o, in, ldy);
      continue;
    }
    int64_t o = 0;
    for (; o + O <= out; o += O) {
      const float* wo = w + o * in;
      const float* bo = bias ? bias + o : nullptr;
      block<V, R, O, true>(xc, wo, bo, yc + o, in, ldy);
      int64_t r = R;
      for (; r + R <= rows; r += R) block<V, R, O>(xc + r * in, wo, bo, yc + r * ldy + o, in, ldy);
      for (; r < rows; ++r) block<V, 1, O>(xc + r * in, wo, bo, yc + r * ldy + o, in, ldy);
    }
    for (; o < out; ++o)
      for (int64_t r = 0; r < rows; ++r)
        block<V, 1, 1>(xc + r * in, w + o * in, bias ? bias + o : nullptr, yc + r * ldy + o, in, ldy);
  }
}

#undef FD_MM_INLINE

}  // namespace
}  // namespace flashdraft::ops::cpu
