// The paged attention's launch rules (paged_attention_plan.h).
#include "ops/cuda/paged_attention_plan.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace flashdraft::ops::cuda {
namespace attention {
namespace {

constexpr int kBN = kAttnTileKeys;

int g_forced_groups = 0;
int g_split_keys = 0;     // 0: SplitTiers' defaults
int g_forced_layout = 0;  // 10 * warps along M + warps sharing a tile; 0: the rules' choice

struct NoLaunch {
  template <int WM, int WK>
  void run() {}
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Tiles on the critical path of a grid whose key range of `reach` keys is cut
// into `groups` groups of `group_keys` (the last takes the rest): CTAs run in
// waves of `capacity` in index order (kv head fastest, then key group), each
// wave as long as its longest CTA. A coarse model, used only to compare two
// groupings of one launch.
int64_t path_tiles(int64_t units, int64_t n_kv, int64_t groups, int64_t group_keys, int64_t reach, int64_t capacity) {
  const int64_t ctas = units * groups;
  int64_t total = 0;
  for (int64_t first = 0; first < ctas; first += capacity) {
    int64_t most = 0;
    for (int64_t idx = first; idx < std::min(ctas, first + capacity); ++idx) {
      const int64_t g = (idx / n_kv) % groups;
      most = std::max(most, ceil_div(g + 1 < groups ? group_keys : reach - g * group_keys, kBN));
    }
    total += most;
  }
  return total;
}

Grouping plan_groups(const SplitTiers& splits, int64_t units, int64_t n_kv, int64_t reach, int64_t sms, int per_sm) {
  // Batches too small to give every SM a CTA have their key range cut into
  // groups of whole splits, of equal keys: 128 x 2^i of them, which puts
  // group edges on split edges (a group never takes two 512-key splits where
  // its neighbours take one). One CTA per SM while that leaves each at most
  // 8 tiles, else as many CTAs as fit; a last, partial group may go past
  // (a 16-row block's 16 keys past 8k). H100, decode batch 1, 8k: 16 groups
  // of 8 tiles 26.3 us, 32 of 4 tiles 28.0; 16k: 16 of 16 tiles 40.9, 32 of
  // 8 tiles 38.6; a second wave of CTAs costs more than an idle SM. The
  // grouping changes no bits (paged_attention.cu's top comment), only where
  // the fold runs. A group's keys start at the split holding its first key,
  // up to one longest split before it under a window.
  Grouping g;
  const auto clamp_int = [](int64_t v) { return static_cast<int>(std::min<int64_t>(v, 1 << 30)); };
  g.most[0] = clamp_int(sms / units);
  g.most[1] = clamp_int(sms * per_sm / units);
  g.capacity = sms * per_sm;
  g.group_keys = fit_group_keys(clamp_int(reach), g.most, splits.len[0], 1 << 30);
  if (g_forced_groups > 0)
    g.group_keys = std::max<int64_t>(kBN, ceil_div(ceil_div(reach, g_forced_groups), kBN) * kBN);
  // A batch that fills the GPU folds in the kernel.
  g.groups = units >= sms && g_forced_groups == 0 ? 1 : std::max<int64_t>(1, ceil_div(reach, g.group_keys));
  // The last group may be a few keys (a 16-row block's 16 past 1024). Where
  // its CTAs push full-length ones into a second wave, the group before it
  // takes them instead (H100, 16-row blocks at batch 8, ctx 1k: 61 -> 48 us);
  // where they only trail the first wave it stays (batch 1, 8k: 36.7 us
  // against 40.6 merged). A grid of one wave never gains by it (its longest
  // CTA only gets longer), so most small calls skip the comparison.
  if (g.groups > 1 && g_forced_groups == 0 && units * g.groups > g.capacity &&
      path_tiles(units, n_kv, g.groups - 1, g.group_keys, reach, g.capacity) <
          path_tiles(units, n_kv, g.groups, g.group_keys, reach, g.capacity))
    --g.groups;
  if (g.groups <= 1) g.group_keys = reach;
  // A CTA of a shorter range than `reach` refits, bounded by the grid's
  // groups: with its range equal to reach that gives group_keys again (each
  // step's shortest fit is group_keys or longer).
  if (g.groups > 1 && g_forced_groups == 0)
    for (int i = 0; i < 2; ++i) g.fit_most[i] = static_cast<int>(std::min<int64_t>(g.most[i], g.groups));
  return g;
}

LaunchPlan plan_layout(const AttnShape& shape, const AttnBatch& batch, int64_t span, int64_t sms, int wm, int wk,
                       int per_sm) {
  LaunchPlan L;
  L.wm = wm;
  L.wk = wk;
  L.per_sm = std::clamp(per_sm, 1, max_ctas_per_sm(wm * wk, stages_of(wm, wk)));
  L.m_tiles = static_cast<int>(ceil_div(static_cast<int64_t>(batch.max_rows) * shape.group, 16 * wm));
  L.units = static_cast<int64_t>(batch.n_seqs) * shape.n_kv * L.m_tiles;
  // Splits a CTA's key range can touch: counted from the split holding its
  // first key, which under a window need not be aligned.
  // Splits only lengthen with the key, so a range starting past 0 touches no
  // more of them than one starting at 0, plus one when it starts unaligned.
  L.slots = shape.splits.of(static_cast<int>(span - 1)) + 1 + (shape.window > 0 ? 1 : 0);
  L.reach = span + (shape.window > 0 ? shape.splits.longest() : 0);
  L.grouping = plan_groups(shape.splits, L.units, shape.n_kv, L.reach, sms, L.per_sm);
  return L;
}

int64_t critical_path_tiles(const LaunchPlan& L, int64_t n_kv) {
  return path_tiles(L.units, n_kv, L.grouping.groups, L.grouping.group_keys, L.reach, L.grouping.capacity);
}

}  // namespace

LaunchPlan plan_launch(const AttnShape& shape, const AttnBatch& batch, int64_t span, int64_t sms) {
  // A layout at as many CTAs a multiprocessor as its shared memory allows.
  auto at_most = [&](int wm, int wk) { return plan_layout(shape, batch, span, sms, wm, wk, 2); };
  if (g_forced_layout != 0) return at_most(g_forced_layout / 10, g_forced_layout % 10);
  // M = GQA heads x query rows of the longest sequence: decode packs into one
  // 16-entry tile whose K/V tiles 4 warps share, blocks into 64 (a warp per
  // 16; at small batches 8 warps, two per 16 entries, so each tile's math
  // finishes sooner), prefill into 128-entry tiles (8 warps) to halve the K/V
  // re-reads. The layout changes no bits (paged_attention.cu's Cfg).
  const int64_t m = static_cast<int64_t>(batch.max_rows) * shape.group;
  if (m <= 16) return at_most(1, 4);
  if (m <= 32) return at_most(2, 2);
  if (m > 64) return at_most(8, 1);
  const int64_t heads = static_cast<int64_t>(batch.n_seqs) * shape.n_kv;
  // Short key ranges whose 16-entry tiles alone fill the GPU in one wave
  // run 1 x 4 (four warps share each tile, the fold stays in the kernel):
  // H100, 16-row blocks at batch 8, ctx 1k: 38.6 us against 48.2 for 4 x 2
  // in two key groups. Up to 2048 keys, a recorded step's context bucket
  // above 1k (the two are about even at 2k). Past that, 4 x 1 (two CTAs a
  // multiprocessor, so twice the key groups) beats 4 x 2 from two
  // sequences up: H200, ctx 8k, bench_cycle's cycle at batch 2 / 4 / 8
  // 8.02-8.04 / 11.95-11.97 / 16.10 ms -> 7.65-7.72 / 11.16-11.24 /
  // 14.84-14.97 (bench_attention --explore: 47.7 / 83.7 / 152.5 us -> 41.9
  // / 72.9 / 125.9); at 1k 4 x 1 lost in the cycle (batch 4: 9.76-9.77 ->
  // 10.01-10.07 ms) though it won alone, so 4 x 2 stays there, and at
  // batch 1 (where 2 x 2, also faster alone, lost too: fp8 drafter, 1k,
  // 5.65-5.69 -> 5.78 ms).
  const int64_t tiles16 = heads * ceil_div(m, 16);
  if (tiles16 >= sms && tiles16 <= 2 * sms && span <= 32 * kBN) return at_most(1, 4);
  if (heads < sms && span <= 32 * kBN) return at_most(4, 2);
  if (heads * 16 > sms) return at_most(4, 1);
  // At batch 1 past 2048 keys, 4 x 1 with one CTA a multiprocessor, unless
  // two a multiprocessor take 4 tiles or more off the critical path. Two a
  // multiprocessor cost more inside the cycle than alone: a grid launched
  // early (a programmatic dependent of the qkv projection) lands two CTAs on
  // each multiprocessor that frees up first while others stay idle. H200,
  // bench_cycle at 8192 keys, fp8 drafter, batch 1 (41 block calls a cycle;
  // paths of 9 tiles at one a multiprocessor, 8 at two): cycle 6.23-6.27 ms
  // with 4 x 2, 6.45-6.47 with 4 x 1 at two, 6.30-6.33 with those launched
  // without the early start, 6.12-6.14 with 4 x 1 at one; alone 4 x 2 took
  // 31.0 us and 4 x 1 29.0-30.0 at either. Past 16 x 512 keys one a
  // multiprocessor leaves a kv head at most 16 key groups, so they double (a
  // recorded step's 16384-key bucket: 16 tiles a CTA against 8); there two a
  // multiprocessor took the engine's DFlash step (fp8 drafter, 12000 + 400
  // tokens) to 149.2-149.4 tok/s against 143.6-143.9 at one and 142.7 with
  // 4 x 2 (bench_attention_notes.md).
  const LaunchPlan one = plan_layout(shape, batch, span, sms, 4, 1, 1);
  const LaunchPlan two = plan_layout(shape, batch, span, sms, 4, 1, 2);
  return critical_path_tiles(one, shape.n_kv) >= critical_path_tiles(two, shape.n_kv) + 4 ? two : one;
}

PagedAttentionPlan describe(const LaunchPlan& L, const AttnShape& shape) {
  const int64_t groups = L.grouping.groups;
  return PagedAttentionPlan{16 * L.wm,
                            L.wk,
                            L.m_tiles,
                            static_cast<int>(groups),
                            static_cast<int>(L.grouping.group_keys),
                            static_cast<int>(std::min<int64_t>(L.units * groups, 0x7fffffff)),
                            stages_of(L.wm, L.wk),
                            shape.splits.len[0],
                            L.per_sm};
}

int64_t attention_shape(AttnShape& shape, const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads,
                        int64_t n_kv_heads) {
  shape.n_kv = static_cast<int>(n_kv_heads);
  shape.group = static_cast<int>(n_heads / n_kv_heads);
  shape.n_heads = static_cast<int>(n_heads);
  shape.causal = mask.causal ? 1 : 0;
  // A window at least as long as every key range hides nothing.
  const int64_t max_keys = std::max<int64_t>(1, batch.max_keys);
  shape.window = (mask.window <= 0 || mask.window >= max_keys) ? 0 : static_cast<int>(mask.window);
  shape.splits = g_split_keys > 0 ? uniform_tiers(g_split_keys) : SplitTiers{};
  if (shape.window == 0) return max_keys;
  return std::min<int64_t>(max_keys, (mask.causal ? 1 : 2) * int64_t{shape.window} + batch.max_rows + kBN);
}

}  // namespace attention

void set_paged_attention_forced_splits(int groups) { attention::g_forced_groups = std::max(0, groups); }

void set_paged_attention_split_keys(int keys) {
  attention::g_split_keys = keys > 0 ? std::max(kAttnTileKeys, keys / kAttnTileKeys * kAttnTileKeys) : 0;
}

void set_paged_attention_forced_layout(int warps_m, int warps_k) {
  const int code = 10 * warps_m + warps_k;
  if (code != 0 && !attention::with_layout(code, attention::NoLaunch{}))
    throw Error("paged_attention: no warp layout " + std::to_string(warps_m) + " x " + std::to_string(warps_k) +
                " (there are 1x4, 2x2, 4x2, 4x1, 8x1)");
  attention::g_forced_layout = code;
}

PagedAttentionPlan plan_paged_attention(const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads,
                                        int64_t n_kv_heads, int sms) {
  if (n_kv_heads <= 0 || n_heads <= 0 || n_heads % n_kv_heads != 0 || sms <= 0 || batch.n_seqs <= 0 ||
      batch.max_rows <= 0)
    throw Error("plan_paged_attention: needs whole GQA groups, a multiprocessor and a non-empty batch");
  attention::AttnShape shape;
  const int64_t span = attention::attention_shape(shape, batch, mask, n_heads, n_kv_heads);
  return attention::describe(attention::plan_launch(shape, batch, span, sms), shape);
}

}  // namespace flashdraft::ops::cuda
