#pragma once
// The GEMM kernel's Split mode, after the multiply: the slices of one output
// tile are a cluster, each block leaves its partial in its shared memory, and
// each then folds a share of the tile from all of them, in slice order, by
// rule 2 of gemm_invariant.cuh. The fold either stores y (fold_columns) or finishes
// the tile as the kernel that would follow it does: rope_store_kv's work
// (rope_fold) or silu_glu's (glu_fold). `S` is the kernel's tile shape
// (gemm_tiles.cu): BN columns, partials kPartialLd floats a row apart.
#include <cuda_bf16.h>

#include <cstdint>

#include "ops/cuda/common.cuh"
#include "ops/cuda/gemm_invariant.cuh"
#include "ops/cuda/gemm_tiles.h"
#include "ops/cuda/glu_math.cuh"
#include "ops/cuda/rope_math.cuh"

namespace flashdraft::ops::cuda::gemm {

// Split mode's cluster holds every slice of a tile: at most 8 (portable size).
constexpr int kMaxSlices = 8;

// Four adjacent columns at `at` of every slice's partial (16-byte loads, all
// in flight at once), folded in slice order.
__device__ __forceinline__ float4 fold_quad(const float* const (&from)[kMaxSlices], int slices, int at) {
  float4 t[kMaxSlices];
#pragma unroll
  for (int u = 0; u < kMaxSlices; ++u)
    t[u] = u < slices ? *reinterpret_cast<const float4*>(from[u] + at) : make_float4(0.f, 0.f, 0.f, 0.f);
  float4 v = t[0];
#pragma unroll
  for (int u = 1; u < kMaxSlices; ++u)
    if (u < slices)
      v = make_float4(gemm::fold(v.x, t[u].x), gemm::fold(v.y, t[u].y), gemm::fold(v.z, t[u].z),
                      gemm::fold(v.w, t[u].w));
  return v;
}

// The split fold: each block of the cluster folds a share of the tile's
// columns, reading every block's partial (`from`, by slice) in slice order,
// so the order never depends on which block finished first.
template <class S, class Y>
__device__ __forceinline__ void fold_columns(const GemmArgs& a, const float* const (&from)[kMaxSlices], int slices,
                                             int x_rows, int m0, int n0, int tid) {
  Y* y = static_cast<Y*>(a.y);
  const int share = (S::BN + slices - 1) / slices, c0 = blockIdx.y * share;
  const int width = max(0, min(min(share, S::BN - c0), a.n - n0 - c0)), count = x_rows * width;
  // Four columns a thread where the share, width and y allow (the slice
  // counts 2, 4 and 8 of the models' shapes): a quarter of the loop trips
  // and 16-byte partial loads. Same folds, element by element.
  Y* y0 = y + static_cast<int64_t>(m0) * a.ldy + n0 + c0;
  if (share % 4 == 0 && width % 4 == 0 && a.ldy % 4 == 0 && reinterpret_cast<uintptr_t>(y0) % (4 * sizeof(Y)) == 0) {
    const int quads = width / 4;
    for (int e = tid; e < x_rows * quads; e += S::kBlockThreads) {
      const int r = e / quads, c = c0 + (e % quads) * 4;
      const float4 v = fold_quad(from, slices, r * S::kPartialLd + c);
      alignas(16) Y out[4] = {gemm::finish<Y>(v.x, a.bias, a.bias_f32, n0 + c),
                              gemm::finish<Y>(v.y, a.bias, a.bias_f32, n0 + c + 1),
                              gemm::finish<Y>(v.z, a.bias, a.bias_f32, n0 + c + 2),
                              gemm::finish<Y>(v.w, a.bias, a.bias_f32, n0 + c + 3)};
      Y* to = y0 + static_cast<int64_t>(r) * a.ldy + (c - c0);
      if constexpr (sizeof(Y) == 2)
        *reinterpret_cast<uint2*>(to) = *reinterpret_cast<const uint2*>(out);
      else
        *reinterpret_cast<float4*>(to) = *reinterpret_cast<const float4*>(out);
    }
  } else {
    for (int e = tid; e < count; e += S::kBlockThreads) {
      const int r = e / width, c = c0 + e % width, at = r * S::kPartialLd + c;
      float t[kMaxSlices];
#pragma unroll
      for (int u = 0; u < kMaxSlices; ++u) t[u] = u < slices ? from[u][at] : 0.f;
      float v = t[0];
#pragma unroll
      for (int u = 1; u < kMaxSlices; ++u)
        if (u < slices) v = gemm::fold(v, t[u]);
      y[(m0 + r) * a.ldy + n0 + c] = gemm::finish<Y>(v, a.bias, a.bias_f32, n0 + c);
    }
  }
}

// The split fold of a qkv projection tile (one head: kRopeHeadDim columns)
// finished as rope_store_kv finishes it: a warp per row of the tile, dealt
// round the cluster's warps, lane l folding columns [4 l, 4 l + 4) from every
// slice's partial (the fold and rounding of the plain path), then, by the
// arithmetic and lane layout of rope_math.cuh: q normed, rotated and written
// back; k written as projected, then normed, rotated and stored in its pool
// slot; v written and stored.
template <class S>
__device__ __forceinline__ void rope_fold(const GemmArgs& a, const float* const (&from)[kMaxSlices], int slices,
                                          int x_rows, int m0, int n0, int warp, int lane) {
  static_assert(S::BN == kRopeHeadDim && kRopeHeadDim == 32 * 4, "a tile is one head, four columns a lane");
  constexpr int kWarps = S::kBlockThreads / 32, kHalf = kRopeHeadDim / 2;
  const RopeEpilogue& e = a.rope;
  const int head = n0 / kRopeHeadDim, c = 4 * lane;
  const bool is_q = head < e.heads, is_k = !is_q && head < e.heads + e.kv_heads;
  const bf16* norm = static_cast<const bf16*>(is_q ? e.q_norm : e.k_norm);
  bf16* y = static_cast<bf16*>(a.y);
  for (int r = blockIdx.y * kWarps + warp; r < x_rows; r += slices * kWarps) {
    const float4 v = fold_quad(from, slices, r * S::kPartialLd + c);
    const int row = m0 + r;
    const int n = n0 + c;
    float x[4] = {__bfloat162float(gemm::finish<bf16>(v.x, a.bias, a.bias_f32, n)),
                  __bfloat162float(gemm::finish<bf16>(v.y, a.bias, a.bias_f32, n + 1)),
                  __bfloat162float(gemm::finish<bf16>(v.z, a.bias, a.bias_f32, n + 2)),
                  __bfloat162float(gemm::finish<bf16>(v.w, a.bias, a.bias_f32, n + 3))};
    bf16* out = y + static_cast<int64_t>(row) * a.ldy + n;
    if (!is_q) store_vec<4>(out, x);  // k and v columns keep the projection
    const int32_t slot = e.slots[row];
    if (!is_q && (slot < 0 || slot >= e.pool_rows)) continue;  // no pool row: nothing to store
    const int64_t kv_col = static_cast<int64_t>(head - e.heads - (is_k ? 0 : e.kv_heads)) * kRopeHeadDim + c;
    if (!is_q && !is_k) {  // v
      store_vec<4>(static_cast<bf16*>(e.v_cache) + slot * e.ldv + kv_col, x);
      continue;
    }
    if (norm) {
      const float scale = rope_math::rms_factor(rope_math::add_squares<4>(x, 0.f), kRopeHeadDim, e.eps);
      float w[4];
      load_vec<4>(norm + c, w);
#pragma unroll
      for (int i = 0; i < 4; ++i) x[i] = rope_math::normed(x[i], scale, w[i]);
    }
    // Lane l < 16 holds the first half of its pairs, lane l + 16 the second.
    const float position = static_cast<float>(e.positions[row]);
    float rotated[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float partner = __shfl_xor_sync(0xffffffffu, x[i], 16);
      float co, si;
      rope_math::cos_sin(position, e.inv_freq[(c + i) % kHalf], e.attention_factor, co, si);
      rotated[i] = lane < 16 ? rope_math::rotated_first(x[i], partner, co, si)
                             : rope_math::rotated_second(partner, x[i], co, si);
    }
    store_vec<4>(is_q ? out : static_cast<bf16*>(e.k_cache) + slot * e.ldk + kv_col, rotated);
  }
}

// The split fold of a GluTiles [gate; up] tile (its 64 gate rows, then the
// 64 matching up rows) finished as silu_glu finishes it: y (silu_glu's out,
// n / 2 columns) gets columns [64 t, 64 t + 64) of tile t, each block of the
// cluster a share of them, four a thread. Gate and up are folded and rounded
// as the plain path rounds them, then combined by glu_math.cuh.
template <class S>
__device__ __forceinline__ void glu_fold(const GemmArgs& a, const float* const (&from)[kMaxSlices], int slices,
                                         int x_rows, int m0, int n0, int tid) {
  constexpr int kRun = S::BN / 2;
  static_assert(kRun == kGluRun, "a tile is one run of gate rows and its up rows");
  const int share = kRun / slices, c0 = blockIdx.y * share, quads = share / 4;  // slices 2, 4, 8: whole quads
  bf16* y = static_cast<bf16*>(a.y) + static_cast<int64_t>(m0) * a.ldy + n0 / 2;
  for (int e = tid; e < x_rows * quads; e += S::kBlockThreads) {
    const int r = e / quads, c = c0 + (e % quads) * 4, at = r * S::kPartialLd + c;
    const float4 g = fold_quad(from, slices, at), u = fold_quad(from, slices, at + kRun);
    const auto rounded = [](float v) { return __bfloat162float(gemm::finish<bf16>(v, nullptr, false, 0)); };
    float out[4] = {glu_math::silu_times(rounded(g.x), rounded(u.x)),
                    glu_math::silu_times(rounded(g.y), rounded(u.y)),
                    glu_math::silu_times(rounded(g.z), rounded(u.z)),
                    glu_math::silu_times(rounded(g.w), rounded(u.w))};
    store_vec<4>(y + static_cast<int64_t>(r) * a.ldy + c, out);
  }
}

}  // namespace flashdraft::ops::cuda::gemm
