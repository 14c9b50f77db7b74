#pragma once
// The CUDA paged attention's launch rules: the warp layout, CTAs a
// multiprocessor and key groups of a call, decided on the host before
// anything runs. Host arithmetic only, so plan_paged_attention
// (paged_attention.h) runs them without a GPU for tests. None of it changes a
// bit (paged_attention.cu's top comment says why); it decides how a call's
// work spreads over the multiprocessors.
#include <cstdint>

#include "ops/backend.h"
#include "ops/cuda/attention_splits.h"
#include "ops/cuda/paged_attention.h"

namespace flashdraft::ops::cuda::attention {

// K/V ring depth: 3 stages fit two 4-warp CTAs per SM. (Measured on H100: a
// 6-stage ring with one CTA per SM for small split batches was 2-7% slower.)
constexpr int kStagesShared = 3;
// The prefill layout (8 x 1, one CTA a multiprocessor) runs a 4-stage ring:
// its warpgroups take turns and issue a tile's copies three tiles ahead.
constexpr int stages_of(int wm, int wk) { return wm == 8 && wk == 1 ? 4 : kStagesShared; }
// CTAs of `warps` warps and a ring of `stages` K/V stages that a
// multiprocessor's shared memory holds (Cfg::kSmem: two of the 4-warp
// layouts with 3 stages).
constexpr int max_ctas_per_sm(int warps, int stages) { return (warps > 4 || stages > 3) ? 1 : 2; }

// What a launch depends on besides its batch: heads, mask and split positions.
struct AttnShape {
  int n_kv = 0, group = 0, n_heads = 0;
  int causal = 0, window = 0;  // window 0: none
  SplitTiers splits;
};
// The shape of a call (the split positions: SplitTiers' defaults unless the
// split-keys hook is set); returns the longest key range one CTA can be
// given (a window: its rows' window, twice without causality, plus alignment
// slack).
int64_t attention_shape(AttnShape& shape, const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads,
                        int64_t n_kv_heads);

// How a launch cuts each (sequence, kv head, M tile) unit's key range of
// `reach` keys into CTA groups, for a layout that fits `per_sm` CTAs a
// multiprocessor.
struct Grouping {
  int64_t groups = 1, group_keys = 0;
  int most[2] = {0, 0};  // the host's rule's bounds
  int64_t capacity = 0;  // CTAs resident at once
  // What a CTA refits its groups by (the kernel's Params::fit_most): the
  // bounds capped at the grid's groups; 0 where the groups are fixed (one
  // group, or the forced-splits hook).
  int fit_most[2] = {0, 0};
};
// A launch, decided on the host before anything runs: the warp layout (wm
// rows of 16 entries x wk warps sharing each K/V tile), how many CTAs a
// multiprocessor may hold (at most what its shared memory allows; fewer are
// asked for through the shared memory, as paged_attention.cu's launch()
// does) and the key groups.
struct LaunchPlan {
  int wm = 1, wk = 4, per_sm = 1;
  int m_tiles = 1;
  int64_t units = 0;  // (sequence, kv head, M tile) triples
  int64_t reach = 0;  // keys a unit's groups cover
  int64_t slots = 0;  // partial slots a row's range can touch
  Grouping grouping;
};

LaunchPlan plan_launch(const AttnShape& shape, const AttnBatch& batch, int64_t span, int64_t sms);
PagedAttentionPlan describe(const LaunchPlan& L, const AttnShape& shape);

// The warp layouts the kernel is built for, by code (10 * warps along M +
// warps sharing a tile): calls f.template run<WM, WK>() for the code's
// layout and says whether there is one.
template <class F>
bool with_layout(int code, F&& f) {
  switch (code) {
    case 14: f.template run<1, 4>(); return true;
    case 22: f.template run<2, 2>(); return true;
    case 42: f.template run<4, 2>(); return true;
    case 41: f.template run<4, 1>(); return true;
    case 81: f.template run<8, 1>(); return true;
    default: return false;
  }
}

}  // namespace flashdraft::ops::cuda::attention
