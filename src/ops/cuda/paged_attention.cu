// Paged attention on sm_90: one tensor-core kernel (mma.sync m16n8k16 bf16,
// f32 accumulate; wgmma for prefill, the same arithmetic) for decode,
// verify/drafter blocks and prefill.
//
// Work decomposition. GQA heads that share a kv head are packed into the M
// dimension together with the query rows (m = row * group + head_in_group), so
// each K/V tile is read from memory once per kv head, not once per query head.
// One CTA = (sequence, kv head, M tile of 16*WM entries, key group): WM warp
// rows of 16 entries, each with WK warps sharing its K/V tiles (see Cfg):
//   M <= 16 (decode)                1 x 4 warps
//   M <= 32                         2 x 2
//   M <= 64 (16-row blocks, g 4)    4 x 2 at small batches up to 2048 keys,
//                                   else 4 x 1 (at batch 1 mostly one CTA a
//                                   multiprocessor); 1 x 4 for short keys
//                                   when 16-entry tiles fill the GPU
//   M > 64 (prefill)                8 x 1: 128 entries a CTA halve the K/V re-reads;
//                                   its products by wgmma, a warpgroup per 64
//                                   entries, which gives mma.sync's bits (wgmma.cuh)
//
// Batch invariance (greedy DFlash must equal plain decoding): a row's output
// may not depend on the call's other rows, so its arithmetic is one fixed
// chain. Keys are cut into splits at fixed positions (attention_splits.h: 128
// keys long up to key 1024, 256 up to 4096, 512 up to 16384, then 1024);
// within a split the row runs an online softmax over 64-key tiles in key
// order, from a fresh state; the splits' results are then merged by one left
// fold in ascending split order (attention_fold.cuh), empty splits skipped.
// Where that fold runs is free: a CTA that owns a row's whole key range folds
// in registers as the pipeline crosses each split boundary and writes the
// output; when the key range is cut into several CTA groups for parallelism
// (small batches), each CTA writes its splits' partial states and the split
// reduce (paged_attention_reduce.cu) runs the same fold. Tiles a row cannot
// see, which other rows of its CTA can, leave its state exactly unchanged.
// Which layout and groups a call gets is decided on the host
// (paged_attention_plan.cpp).
//
// K/V tiles of 64 keys stream through a 3-stage cp.async ring, up to two CTAs
// per SM for the 4-warp layouts, across split boundaries. Each key row is
// gathered through the block table; keys outside the union of the CTA rows'
// visible ranges are neither looked up nor read (the smem row is zero-filled),
// so unowned or evicted slots (NaN in tests) never reach the P.V product, and
// scores are masked by selecting -inf (never by multiplying).
#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "ops/cuda/attention_fold.cuh"
#include "ops/cuda/attention_splits.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernel_launch.h"
#include "ops/cuda/mbarrier.cuh"
#include "ops/cuda/paged_attention.h"
#include "ops/cuda/paged_attention_plan.h"
#include "ops/cuda/paged_attention_reduce.h"
#include "ops/cuda/wgmma.cuh"

namespace flashdraft::ops::cuda {
namespace {

using bf16 = __nv_bfloat16;

using attention::max_ctas_per_sm;
using attention::stages_of;
constexpr int kBN = kAttnTileKeys;  // keys per pipeline tile

struct Params {
  const bf16* q;
  const bf16* k;
  const bf16* v;
  bf16* out;
  float* part_o;    // [slots][n_rows][n_heads][HD]: a split's P.V sums, unnormalised
  float2* part_ml;  // [slots][n_rows][n_heads]: its running max (log2 domain; -inf: empty) and sum
  const int32_t* q_start;
  const int32_t* pos0;
  const int32_t* block_tables;
  int64_t q_ld, kv_ld, out_ld;
  int n_kv, group, n_heads, n_rows;
  int max_blocks, block_size, bs_shift;  // bs_shift >= 0 when block_size is a power of two
  int m_tiles;
  // CTAs along the key range (1: fold in the kernel). Group g takes the
  // splits that begin in keys [A + g * group_keys, A + (g + 1) * group_keys),
  // A the first key of the split holding the CTA's first key: groups of about
  // equal keys although splits lengthen. slots: partial slots per row (the
  // most splits a row's range can touch), counted from that split.
  int groups, group_keys, slots;
  // Where the grid was sized for a longer key range than a CTA's own (a
  // recorded step sizes it for its context bucket), the CTA sizes its groups
  // from its own range by the host's rule (group_keys_for with fit_most[0],
  // then [1]; 0: keep group_keys), so the groups' keys shrink with the range
  // and more CTAs share it: never more keys than group_keys, never more
  // groups than the grid has.
  int fit_most[2];
  SplitTiers splits;
  int causal, window;        // window 0: none
  float scale_log2;
};

// ---- PTX wrappers ----

// src_bytes 0 zero-fills the 16 smem bytes without touching global memory.
// (L2::128B / L2::256B prefetch hints measured no different on H100.)
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// A block id into shared memory (src_bytes 0: zero, nothing read).
__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}


__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// Rows of HD bf16 in shared memory, 16-byte chunks XOR-swizzled by row so that
// ldmatrix's 8 row addresses (and cp.async's 8-thread phases) hit 8 different
// bank groups although rows are 128 or 256 bytes apart.
template <int HD>
__device__ __forceinline__ int swz(int row, int chunk) {
  return row * HD + ((chunk ^ (row & 7)) << 3);
}
// The byte offset of 16-byte chunk `chunk` of row `row` in a Q or K/V tile
// of `rows` rows. Most layouts keep a row's HD elements together (swz). The
// prefill layout's tiles are wgmma operands, 128-byte-swizzled (wgmma.cuh):
// rows of 64 elements, so a tile is HD / 64 blocks of `rows` such rows one
// after the other, a row's chunks XOR-ed with row % 8 as swz does. At HD 64
// the two are the same.
template <int HD, bool kBlocks64>
__device__ __forceinline__ uint32_t tile_off(int row, int chunk, int rows) {
  if constexpr (kBlocks64)
    return static_cast<uint32_t>(((chunk >> 3) * rows + row) * 128 + (((chunk & 7) ^ (row & 7)) << 4));
  else
    return static_cast<uint32_t>(swz<HD>(row, chunk)) * 2u;
}

// WM warp rows along M (16 entries each) x WK warps sharing each K/V tile of
// those rows. The WK warps of a row group split a tile's work along dimensions
// that change no element's arithmetic: the scores by 8-key n-tiles, the output
// by 8-column d-tiles. They exchange the row maxima (max is exact), P in bf16
// (the very values a single warp would feed its P.V product) and partial row
// sums; a tile's row sum is a fixed tree of 16-key quarter sums that every
// layout computes in the same order. So a row's bits do not depend on WK.
template <int HD, int WM, int WK, int STAGES>
struct Cfg {
  static constexpr int kStages = STAGES;
  static constexpr int NW = WM * WK;
  static constexpr int kThreads = 32 * NW;
  static constexpr int RW = kBN / NW;  // tile rows each warp loads
  static constexpr int BM = 16 * WM;   // M entries per CTA
  static constexpr int NT = kBN / 8;   // n-tiles of S per tile
  static constexpr int NTW = NT / WK;  // ... per warp
  static constexpr int KS = kBN / 16;  // k-steps of P.V
  static constexpr int DT = HD / 8;    // d-tiles of O
  static constexpr int DTW = DT / WK;  // ... per warp
  static constexpr int QK = HD / 16;   // k-steps of Q.K^T
  static constexpr int CH = HD / 8;    // 16-byte chunks per row
  // The prefill layout (8 x 1) runs its products on wgmma where the device
  // pass has it, a warpgroup per 64 entries (see the kernel); its Q and K/V
  // tiles are laid out as wgmma's operands in every pass (tile_off), so the
  // host and each device pass agree on its shared memory.
  static constexpr bool kWgLayout = WM == 8 && WK == 1;
  // Q fragments stay in registers unless that would crowd out the
  // accumulators; then they are reloaded from shared memory for every tile.
  static constexpr bool kQInRegs = 2 * DTW * 4 + QK * 4 + NTW * 4 <= 160;
  static constexpr int kSmemQ = BM * HD * 2;
  static constexpr int kSmemStage = 2 * kBN * HD * 2;
  static constexpr int kSmemP = WK > 1 ? BM * kBN * 2 : 0;
  static constexpr int kSmemRed = WK > 1 ? (WK * BM + WK * WM * 32 * 2) * 4 : 0;
  // The 4 x 1 layout at head_dim 128 sits at 255 registers: what costs the
  // others nothing spills there, so it keeps the register-light form of the
  // two choices below (bench_attention_notes.md).
  static constexpr bool kAtRegisterLimit = HD == 128 && WM == 4 && WK == 1;
  // Block ids of the tiles ahead come through shared memory (a ring like the
  // K/V stages), except at the register limit (the ring's addressing took its
  // spills from 8 to 56 bytes and its 16-row blocks 5-10% slower), which
  // keeps looking them up into a register one tile ahead.
  // (So does the prefill layout, whose warpgroups do not meet at every tile.)
  static constexpr bool kIdsInSmem = !kAtRegisterLimit && !kWgLayout;
  // A masked tile's visibility from each row's key bounds (two compares an
  // element), except at the register limit (the bounds spilled 28 bytes and
  // made its 16-row blocks 2.5-4% slower, H200), which keeps the per-element
  // condition, whose && and || compile to branches (~10 instructions an element).
  static constexpr bool kMaskByRowBounds = !kAtRegisterLimit;
  static constexpr int kSmemIds = kIdsInSmem ? kStages * kBN * 4 : 0;
  // The prefill layout's stage barriers: "full" and "empty" a stage (the kernel).
  static constexpr int kSmemBars = kWgLayout ? 2 * kStages * 8 : 0;
  // wgmma's swizzled operands need 1024-byte-aligned tiles: room to align the base.
  static constexpr int kSmemAlign = kWgLayout ? 1024 : 0;
  static constexpr int kSmem =
      kSmemQ + kStages * kSmemStage + kSmemP + kSmemRed + kSmemIds + kSmemBars + kSmemAlign;
  static_assert(!kWgLayout || kStages >= 4, "the prefill layout's ring needs 4 stages (see the kernel)");
  static constexpr int kCtasPerSm = max_ctas_per_sm(NW, STAGES);
  static_assert(NT % WK == 0 && DT % (2 * WK) == 0 && (NTW % 2 == 0), "warp split must keep whole quarters");
};

template <int HD, int WM, int WK, int STAGES>
__global__ void __launch_bounds__(32 * WM * WK, Cfg<HD, WM, WK, STAGES>::kCtasPerSm)
    paged_attention_kernel(const Params p) {
  using C = Cfg<HD, WM, WK, STAGES>;
  constexpr int kStages = STAGES;
  constexpr int BM = C::BM, NTW = C::NTW, KS = C::KS, DTW = C::DTW, QK = C::QK, CH = C::CH, RW = C::RW;
  constexpr int kThreads = C::kThreads;
  constexpr int NQ = NTW / 2;  // 16-key quarters of a tile per warp

  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned char* smem = smem_raw;
  if constexpr (C::kWgLayout) smem += (1024u - (smem_u32(smem_raw) & 1023u)) & 1023u;
  // The products by wgmma: the prefill layout on an sm_90a pass.
  constexpr bool kWgmma = C::kWgLayout && FD_HAVE_WGMMA;
  constexpr bool kWgL = C::kWgLayout;
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sK = reinterpret_cast<bf16*>(smem + C::kSmemQ);
  bf16* sV = sK + kStages * kBN * HD;
  unsigned char* after_ring = smem + C::kSmemQ + kStages * C::kSmemStage;
  bf16* sP = reinterpret_cast<bf16*>(after_ring);
  float* red_m = reinterpret_cast<float*>(after_ring + C::kSmemP);  // [WK][BM]
  float* red_q = red_m + WK * BM;                                                  // [WK][WM][32][2]
  const int32_t* s_ids = reinterpret_cast<const int32_t*>(after_ring + C::kSmemP + C::kSmemRed);
  uint64_t* full = reinterpret_cast<uint64_t*>(after_ring + C::kSmemP + C::kSmemRed + C::kSmemIds);  // [kStages]
  uint64_t* empty = full + kStages;                                                                // [kStages]
  // The shared address of chunk `chunk` of row `row` of a Q or K/V tile of `rows` rows (tile_off).
  auto tile_addr = [](const bf16* tile, int row, int chunk, int rows) -> uint32_t {
    if constexpr (kWgL)
      return smem_u32(tile) + tile_off<HD, true>(row, chunk, rows);
    else
      return smem_u32(tile + swz<HD>(row, chunk));
  };

  // Let the split reduce (a programmatic dependent launch) get scheduled as
  // soon as the last CTA of this grid is resident; it waits for our writes.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % WM, wk = warp / WM;

  // kv head fastest: neighbouring CTAs read the neighbouring 256-byte pieces of the same pool rows.
  int idx = blockIdx.x;
  const int kvh = idx % p.n_kv;
  idx /= p.n_kv;
  const int grp = idx % p.groups;
  idx /= p.groups;
  // Last M tiles first: under a causal mask they have the most keys, so the long CTAs start early.
  const int mt = p.m_tiles - 1 - idx % p.m_tiles;
  const int s = idx / p.m_tiles;

  // Start-up is a chain of dependent loads (metadata -> block table -> K/V), paid
  // once per CTA before any K/V byte moves. Issue the metadata loads together,
  // and without a window also the table lookups of the first tiles, whose keys
  // do not depend on metadata (indices checked against max_blocks only; the
  // values are used only for keys found valid below).
  const int32_t* table = p.block_tables + static_cast<int64_t>(s) * p.max_blocks;
  auto table_block = [&](int j) { return p.bs_shift >= 0 ? (j >> p.bs_shift) : (j / p.block_size); };
  auto load_block = [&](int j) {
    const int b = table_block(j);
    return b < p.max_blocks ? __ldg(table + b) : 0;
  };
  // The first split of group g, counted from split `base` (first key a).
  int group_keys = p.group_keys;
  auto group_first = [&](int g, int base, int a) {
    return g == 0 ? base : p.splits.of(a + g * group_keys - 1) + 1;
  };
  const int lane_key = warp * RW + (lane % RW);  // the key (within a tile) whose slot this lane looks up
  constexpr int kFirst = C::kIdsInSmem ? kStages - 1 : kStages;  // tiles looked up before the loop
  int first_blk[kFirst];
  // Looked up by the host's groups; a CTA whose refit (below) changes them
  // looks up again after, through the window's late lookup (a second early
  // one cost the 4 x 1 kernel 84 bytes of spills at its 255 registers).
  const bool early_tiles = p.window == 0;
  if (early_tiles) {
#pragma unroll
    for (int st = 0; st < kFirst; ++st)
      first_blk[st] = load_block(p.splits.begin(group_first(grp, 0, 0)) + st * kBN + lane_key);
  }
  const int row0 = p.q_start[s];
  const int row_end = p.q_start[s + 1];
  const int pos0 = p.pos0[s];
  const int n_rows = row_end - row0;
  const int G = p.group;
  const int M = n_rows * G;
  const int m0 = mt * BM;
  if (m0 >= M) return;
  const int kv_len = pos0 + n_rows;
  const int m_last = min(m0 + BM, M) - 1;
  const int p_first = pos0 + m0 / G, p_last = pos0 + m_last / G;
  // Union of the visible ranges of this CTA's rows: only these keys are ever
  // read. A window reaches back W - 1 keys, and without causality as far ahead.
  const int hi = p.causal ? p_last + 1 : p.window > 0 ? min(kv_len, p_last + p.window) : kv_len;
  const int lo = p.window > 0 ? max(0, p_first - p.window + 1) : 0;
  // Splits sit at fixed key positions; this CTA's group takes those that
  // begin in its share of keys, counted from the split that holds lo.
  // Partial slots count splits from that one; the last group marks every
  // slot past its own empty.
  const int base = p.splits.of(lo), base_key = p.splits.begin(base);
  if (p.fit_most[0] > 0) group_keys = fit_group_keys(hi - base_key, p.fit_most, p.splits.len[0], p.group_keys);
  const int first_split = group_first(grp, base, base_key);
  const int end_split = group_first(grp + 1, base, base_key);
  const int slot0 = first_split - base;
  const int slot_end = grp == p.groups - 1 ? p.slots : min(end_split - base, p.slots);
  const int k_begin = max((lo / kBN) * kBN, p.splits.begin(first_split));
  const int k_end = grp == p.groups - 1 ? hi : min(hi, p.splits.begin(end_split));  // the last takes any tail

  // Partial slots of this CTA's rows that no tile reaches say so (max -inf), for the reduce.
  auto mark_empty = [&](int slot_from, int slot_end) {
    for (int m = m0 + tid; m <= m_last; m += kThreads) {
      const int r = m / G, h = kvh * G + m % G;
      for (int sl = slot_from; sl < slot_end; ++sl)
        p.part_ml[(static_cast<int64_t>(sl) * p.n_rows + row0 + r) * p.n_heads + h] = make_float2(kNegInf, 0.f);
    }
  };
  // Launched as a programmatic dependent of the kernel that stores the new
  // rows' Q and K/V: everything above read only the step's inputs (block
  // tables, row starts, positions); from here on its results are needed.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  if (p.groups > 1 && k_begin >= k_end) {
    mark_empty(slot0, slot_end);
    return;
  }
  const int n_tiles = max(0, (k_end - k_begin + kBN - 1) / kBN);
  // A tile needs per-element masking unless every key in it is visible to every row of the CTA.
  const int lo_all = p.window > 0 ? p_last - p.window + 1 : 0;
  const int hi_all = p.causal ? p_first : p.window > 0 ? min(kv_len, p_first + p.window) - 1 : kv_len - 1;
  if (!early_tiles || group_keys != p.group_keys) {  // a window's first tiles, or a refitted CTA's
#pragma unroll
    for (int st = 0; st < kFirst; ++st) first_blk[st] = load_block(k_begin + st * kBN + lane_key);
  }

  // ---- Q tile (M entries x HD), rows past the sequence zero-filled ----
  {
    const bf16* qbase = p.q + kvh * G * HD;
    for (int i = tid; i < BM * CH; i += kThreads) {
      const int ml = i / CH, c = i % CH, m = m0 + ml;
      const bool ok = m < M;
      const bf16* src = ok ? qbase + (row0 + m / G) * p.q_ld + (m % G) * HD + c * 8 : p.q;
      cp_async16(tile_addr(sQ, ml, c, BM), src, ok ? 16 : 0);
    }
  }

  // ---- K/V tile loader: warp w fills tile rows [RW*w, RW*w + RW) ----
  // Everything about a copy but the pool slot is fixed per lane, so it is
  // worked out once here: the address of the lane's 16-byte column in pool
  // row 0 (K; V is a fixed byte distance away) and its rows' swizzled
  // offsets in a stage. A tile then costs each row one shuffle, one wide
  // multiply and two copies. (H200, ncu of a 16-row block at batch 1 and 8k:
  // the copies of a tile had taken each warp ~190 instructions of 64-bit
  // address arithmetic, a third of the tile's; bench_attention_notes.md.)
  constexpr int RP = 32 / CH;  // rows per warp instruction
  constexpr int kRowsPerLane = RW / RP;
  const int lane_c = lane % CH, lane_r = lane / CH;
  const uintptr_t k_col = reinterpret_cast<uintptr_t>(p.k + kvh * HD + lane_c * 8);
  const uintptr_t v_from_k = reinterpret_cast<uintptr_t>(p.v) - reinterpret_cast<uintptr_t>(p.k);  // mod 2^64
  const uint32_t row_bytes = static_cast<uint32_t>(p.kv_ld) * 2u;
  uint32_t stage_off[kRowsPerLane];
#pragma unroll
  for (int ps = 0; ps < kRowsPerLane; ++ps)
    stage_off[ps] = tile_off<HD, kWgL>(warp * RW + ps * RP + lane_r, lane_c, kBN);
  const uint32_t sk_base = smem_u32(sK), sv_base = smem_u32(sV);
  // Lane l < RW looks up key RW*warp + l of a tile. The id goes to shared
  // memory by cp.async in the commit group of the tile kStages - 1 before, so
  // it has landed when its tile's copies are issued and no register waits for
  // it. (H200: looked up into a register one tile ahead, the lookup held the
  // copies at batch 1, where a tile's turn comes about every microsecond:
  // bench/kv_layout_probe.cu, bench_attention_notes.md.)
  const uint32_t ids_lane = smem_u32(s_ids + lane_key);
  auto fetch_ids = [&](int tile) {
    if (lane < RW && tile < n_tiles) {
      const int b = table_block(k_begin + tile * kBN + lane_key);
      const bool in = b < p.max_blocks;
      cp_async4(ids_lane + static_cast<uint32_t>((tile % kStages) * kBN * 4), in ? table + b : table, in ? 4 : 0);
    }
  };
  auto issue_tile = [&](int tile, int blk) {
    // Keys outside [lo, hi) are never read: their smem rows are zero-filled
    // (a copy of 0 source bytes, from any valid address).
    const int buf = tile % kStages;
    const int pf_j = k_begin + tile * kBN + lane_key;
    const bool ok = pf_j >= lo && pf_j < hi;
    const int slot = ok ? blk * p.block_size + (pf_j - table_block(pf_j) * p.block_size) : -1;
    const uint32_t dk = sk_base + static_cast<uint32_t>(buf * kBN * HD * 2);
    const uint32_t dv = sv_base + static_cast<uint32_t>(buf * kBN * HD * 2);
#pragma unroll
    for (int ps = 0; ps < kRowsPerLane; ++ps) {
      const int sl = __shfl_sync(0xffffffffu, slot, ps * RP + lane_r);
      const int bytes = sl >= 0 ? 16 : 0;
      const uintptr_t src = k_col + static_cast<uint64_t>(static_cast<uint32_t>(max(sl, 0))) * row_bytes;
      cp_async16(dk + stage_off[ps], reinterpret_cast<const void*>(src), bytes);
      cp_async16(dv + stage_off[ps], reinterpret_cast<const void*>(src + v_from_k), bytes);
    }
  };

  // With wgmma the two warpgroups do not meet at every tile: each takes its
  // turn at the tensor cores (ping-pong, below) while the other runs its
  // softmax, so the K/V ring is tracked by mbarriers. A stage is "full" when
  // every thread's copies into it have landed (each thread waits for its own
  // and fences them for wgmma, whose reads go through the async proxy, then
  // arrives), and "empty" when every thread is done with its tile. A tile's
  // copies are issued 3 tiles ahead, halfway through a tile, and announced
  // 2 tiles ahead, so neither warpgroup waits for the other's half tile.
  if constexpr (kWgmma) {
    if (tid == 0) {
#pragma unroll
      for (int st = 0; st < kStages; ++st) {
        mbar_init(full + st, kThreads);
        mbar_init(empty + st, kThreads);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < n_tiles) issue_tile(st, first_blk[st]);
    if constexpr (C::kIdsInSmem) fetch_ids(st + kStages - 1);
    cp_async_commit();
  }
  int next_blk = 0;  // without the ring: the next tile's id, looked up one tile ahead
  if constexpr (!C::kIdsInSmem) next_blk = first_blk[kStages - 1];
  if constexpr (kWgmma) {
    cp_async_wait<kStages - 3>();  // Q and tiles 0 and 1
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    mbar_arrive(full + 0);
    mbar_arrive(full + 1);
  }

  // A warp whose 16 entries all lie past the sequence only loads (and meets
  // the barriers); with wgmma, a warpgroup whose 64 do (its warps multiply together).
  const bool live = kWgmma ? m0 + (wm / 4) * 64 <= m_last : m0 + wm * 16 <= m_last;
  // Positions of this thread's two M rows (padding rows borrow the last real one).
  const int ra = wm * 16 + (lane >> 2);  // this thread's first row within the CTA (the second: ra + 8)
  const int ma = min(m0 + ra, m_last);
  const int mb = min(m0 + ra + 8, m_last);
  const int pa = pos0 + ma / G, pb = pos0 + mb / G;
  const int c0 = 2 * (lane & 3);  // this thread's first column in each 8-column n-tile
  const int nt0 = wk * NTW;       // this warp's first n-tile of S
  const int dt0 = wk * DTW;       // this warp's first d-tile of O

  uint32_t qf[QK][4];
  float o[DTW][4];
  float m_run[2], l_run[2];
  // A split's running state. O is cleared once, not at every split: a split's
  // first tile has alpha = 0 (its running max starts at -inf), and O is
  // rescaled as fma(O, alpha, +0), which is +0 then whatever O held, so every
  // split starts from +0 in every layout and key grouping. (Clearing it at a
  // split's end made the compiler copy all of O around that branch: with the
  // fold, ~300 instructions a split in the prefill layout.)
  auto reset_split = [&] {
    m_run[0] = m_run[1] = kNegInf;
    l_run[0] = l_run[1] = 0.f;
  };
#pragma unroll
  for (int d = 0; d < DTW; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  reset_split();
  // Fold state (fold mode).
  float m_acc[2] = {kNegInf, kNegInf}, l_acc[2] = {0.f, 0.f};
  float facc[DTW][4];
#pragma unroll
  for (int d = 0; d < DTW; ++d)
#pragma unroll
    for (int e = 0; e < 4; ++e) facc[d][e] = 0.f;

  // End of a split: the row's sum over the quad, then either the fold or the partial slot.
  auto finish_split = [&](int slot) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      l_run[i] = __fadd_rn(l_run[i], __shfl_xor_sync(0xffffffffu, l_run[i], 1));
      l_run[i] = __fadd_rn(l_run[i], __shfl_xor_sync(0xffffffffu, l_run[i], 2));
    }
    if (p.groups > 1) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int m = m0 + ra + 8 * i;
        if (m > m_last) continue;
        const int r = m / G, h = kvh * G + m % G;
        const int64_t ri = (static_cast<int64_t>(slot) * p.n_rows + row0 + r) * p.n_heads + h;
        float* dst = p.part_o + ri * HD + dt0 * 8 + c0;
#pragma unroll
        for (int d = 0; d < DTW; ++d)
          *reinterpret_cast<float2*>(dst + d * 8) = make_float2(o[d][2 * i], o[d][2 * i + 1]);
        if (wk == 0 && (lane & 3) == 0) p.part_ml[ri] = make_float2(m_run[i], l_run[i]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float a, b;
        if (fold_weights(m_acc[i], l_acc[i], m_run[i], l_run[i], a, b)) {
#pragma unroll
          for (int d = 0; d < DTW; ++d) {
            facc[d][2 * i] = fold_acc(facc[d][2 * i], a, o[d][2 * i], b);
            facc[d][2 * i + 1] = fold_acc(facc[d][2 * i + 1], a, o[d][2 * i + 1], b);
          }
        }
      }
    }
    reset_split();
  };

  auto load_q = [&](int ks) {
    ldsm_x4(tile_addr(sQ, wm * 16 + (lane & 15), ks * 2 + (lane >> 4), BM), qf[ks][0], qf[ks][1], qf[ks][2],
            qf[ks][3]);
  };
  int cur_slot = slot0;
  // The key where the next split starts (tiles and splits are kBN-aligned,
  // so the tiles meet it exactly), tracked here rather than found for every
  // tile with up to six integer divisions by the tier lengths (H200: decode
  // at batch 1 and 8k 25.0 -> 22.6 us; bench_attention_notes.md).
  int split = p.splits.of(k_begin);
  int next_split_key = p.splits.begin(split + 1);
  // Tile tn's copies (ids from the ring or the register looked up one tile ahead), as one commit group.
  auto issue_ahead = [&](int tn) {
    if (tn < n_tiles) {
      if constexpr (C::kIdsInSmem) {
        issue_tile(tn, s_ids[(tn % kStages) * kBN + lane_key]);
        fetch_ids(tn + kStages - 1);
      } else {
        issue_tile(tn, next_blk);
        if (tn + 1 < n_tiles) next_blk = load_block(k_begin + (tn + 1) * kBN + lane_key);
      }
    }
    cp_async_commit();
  };
  // Ping-pong: warpgroup w multiplies Q K^T once the other has issued its
  // own (named barriers 1 and 2; warpgroup 1 lets 0 start). Only when both
  // warpgroups have rows; each barrier meets as many arrivals as waits.
  const int wg = warp / 4;
  const bool pingpong = kWgmma && m0 + 64 <= m_last;
  if (pingpong && wg == 1 && n_tiles > 0) asm volatile("bar.arrive 1, 256;\n" ::: "memory");
  for (int t = 0; t < n_tiles; ++t) {
    if constexpr (kWgmma) {
      mbar_wait(full + t % kStages, (t / kStages) & 1);
    } else {
      cp_async_wait<kStages - 2>();
      __syncthreads();  // tile t landed for all; everyone is done with tile t - 1's buffers
      issue_ahead(t + kStages - 1);
    }
    const int kb = k_begin + t * kBN;
    const int buf = t % kStages;
    const bf16* tk = sK + buf * kBN * HD;
    const bf16* tv = sV + buf * kBN * HD;
    // Every rounding of the chain below is pinned by an intrinsic: the masked
    // and unmasked paths and the warp layouts may not contract differently.
    float sc[NTW][4];
    float mx[2] = {kNegInf, kNegInf}, alpha[2], m_use[2], part[2];
    if (live) {
      if constexpr (C::kQInRegs) {
        if (t == 0) {
#pragma unroll
          for (int ks = 0; ks < QK; ++ks) load_q(ks);
        }
      }
      // S = Q K^T for this warp's 16 M rows x its n-tiles, k-steps in order for every n-tile.
#pragma unroll
      for (int n = 0; n < NTW; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
      if constexpr (kWgmma) {
#if FD_HAVE_WGMMA
        // The warpgroup's 64 rows x the tile's 64 keys, the same k-steps in
        // the same order (its accumulators are sc in the mma.sync layout).
        // k-step ks reads bytes [32 (ks % 4), +32) of block ks / 4's rows.
        float(&s_all)[NTW * 4] = reinterpret_cast<float(&)[NTW * 4]>(sc);
        const uint32_t qa = smem_u32(sQ) + static_cast<uint32_t>(wg * 64 * 128);
        if (pingpong) asm volatile("bar.sync %0, 256;\n" ::"r"(1 + wg) : "memory");
        wgmma::fence();
#pragma unroll
        for (int ks = 0; ks < QK; ++ks)
          wgmma::m64n64k16_ss(s_all, wgmma::desc_sw128(qa + (ks / 4) * BM * 128 + (ks % 4) * 32, 16, 1024),
                              wgmma::desc_sw128(smem_u32(tk) + (ks / 4) * kBN * 128 + (ks % 4) * 32, 16, 1024));
        wgmma::commit();
        if (pingpong && !(wg == 1 && t == n_tiles - 1))  // (warpgroup 0 waits no more after its last tile)
          asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - wg) : "memory");
        wgmma::wait();
#endif
      } else {
#pragma unroll
        for (int kk = 0; kk < QK / 2; ++kk) {
          if constexpr (!C::kQInRegs) {
            load_q(2 * kk);
            load_q(2 * kk + 1);
          }
#pragma unroll
          for (int n = 0; n < NTW; ++n) {
            uint32_t b0, b1, b2, b3;
            ldsm_x4(tile_addr(tk, (nt0 + n) * 8 + (lane & 7), kk * 4 + (lane >> 3), kBN), b0, b1, b2, b3);
            mma_bf16(sc[n], qf[2 * kk][0], qf[2 * kk][1], qf[2 * kk][2], qf[2 * kk][3], b0, b1);
            mma_bf16(sc[n], qf[2 * kk + 1][0], qf[2 * kk + 1][1], qf[2 * kk + 1][2], qf[2 * kk + 1][3], b2, b3);
          }
        }
      }
      // Mask by position with a select; the row maximum is taken on raw scores
      // (scale > 0) and scaled into the log2 domain once.
      // One branch around all of it: inside the element loop the compiler
      // kept a branch per element (16 a tile for 4 x 2 warps), taken or not.
      const bool need_mask = !(kb >= lo_all && kb + kBN - 1 <= hi_all);
      if (need_mask) {
        if constexpr (C::kMaskByRowBounds) {
          // Row i sees keys [lo, hi), found once a tile: per element two
          // compares and a select (the condition written per element took
          // branches for its && and ||, ~10 instructions an element).
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const int pq = i == 0 ? pa : pb;
            const int hi = min(kv_len, p.causal ? pq + 1 : p.window == 0 ? kv_len : pq + p.window);
            const int lo = p.window == 0 ? INT_MIN : pq - p.window + 1;
#pragma unroll
            for (int n = 0; n < NTW; ++n) {
#pragma unroll
              for (int e = 2 * i; e < 2 * i + 2; ++e) {
                const int j = kb + (nt0 + n) * 8 + c0 + (e & 1);
                sc[n][e] = (j >= lo) & (j < hi) ? sc[n][e] : kNegInf;
              }
            }
          }
        } else {
#pragma unroll
          for (int n = 0; n < NTW; ++n) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int j = kb + (nt0 + n) * 8 + c0 + (e & 1);
              const int pq = e < 2 ? pa : pb;
              const bool vis = j < kv_len && (p.causal ? j <= pq : p.window == 0 || j < pq + p.window) &&
                               (p.window == 0 || j > pq - p.window);
              sc[n][e] = vis ? sc[n][e] : kNegInf;
            }
          }
        }
      }
#pragma unroll
      for (int n = 0; n < NTW; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) mx[e >> 1] = fmaxf(mx[e >> 1], sc[n][e]);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
      }
      if constexpr (WK > 1) {
        if ((lane & 3) == 0) {
          red_m[wk * BM + ra] = mx[0];
          red_m[wk * BM + ra + 8] = mx[1];
        }
      }
    }
    if constexpr (WK > 1) __syncthreads();  // row maxima of the whole tile
    if (live) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        if constexpr (WK > 1) {
          mx[i] = red_m[ra + 8 * i];
#pragma unroll
          for (int w = 1; w < WK; ++w) mx[i] = fmaxf(mx[i], red_m[w * BM + ra + 8 * i]);
        }
        const float m_new = fmaxf(m_run[i], __fmul_rn(mx[i], p.scale_log2));
        // A row that has seen nothing yet keeps -inf; subtract 0 instead so no inf - inf appears.
        m_use[i] = m_new == kNegInf ? 0.f : m_new;
        alpha[i] = fast_exp2(__fsub_rn(m_run[i], m_use[i]));
        m_run[i] = m_new;
      }
      // P, and this thread's sums of it per 16-key quarter, combined in a fixed tree.
      float q[NQ][2];
#pragma unroll
      for (int n = 0; n < NTW; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) sc[n][e] = fast_exp2(__fmaf_rn(sc[n][e], p.scale_log2, -m_use[e >> 1]));
#pragma unroll
      for (int j = 0; j < NQ; ++j)
#pragma unroll
        for (int i = 0; i < 2; ++i)
          q[j][i] = __fadd_rn(__fadd_rn(sc[2 * j][2 * i], sc[2 * j][2 * i + 1]),
                              __fadd_rn(sc[2 * j + 1][2 * i], sc[2 * j + 1][2 * i + 1]));
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        if constexpr (NQ == 4)
          part[i] = __fadd_rn(__fadd_rn(q[0][i], q[1][i]), __fadd_rn(q[2][i], q[3][i]));
        else if constexpr (NQ == 2)
          part[i] = __fadd_rn(q[0][i], q[1][i]);
        else
          part[i] = q[0][i];
      }
      if constexpr (WK > 1) {
        red_q[((wk * WM + wm) * 32 + lane) * 2] = part[0];
        red_q[((wk * WM + wm) * 32 + lane) * 2 + 1] = part[1];
#pragma unroll
        for (int n = 0; n < NTW; ++n) {
          *reinterpret_cast<uint32_t*>(sP + swz<kBN>(ra, nt0 + n) + c0) = pack_bf16(sc[n][0], sc[n][1]);
          *reinterpret_cast<uint32_t*>(sP + swz<kBN>(ra + 8, nt0 + n) + c0) = pack_bf16(sc[n][2], sc[n][3]);
        }
      }
    }
    if constexpr (WK > 1) __syncthreads();  // P and the partial row sums of the whole tile
    if constexpr (kWgmma) {
      // Halfway through tile t (the other warpgroup is done with tile t - 1):
      // tile t + 3's copies into the stage tile t - 1 left, and tile t + 2
      // announced (its copies went out halfway through tile t - 1).
      const int tn = t + kStages - 1;
      if (tn < n_tiles && tn >= kStages) mbar_wait(empty + tn % kStages, (tn / kStages - 1) & 1);
      issue_ahead(tn);
      cp_async_wait<kStages - 3>();
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      mbar_arrive(full + (t + 2) % kStages);
    }
    if (live) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float rs = part[i];
        if constexpr (WK == 2) {
          rs = __fadd_rn(red_q[((0 * WM + wm) * 32 + lane) * 2 + i], red_q[((1 * WM + wm) * 32 + lane) * 2 + i]);
        } else if constexpr (WK == 4) {
          const float* rq = red_q + (wm * 32 + lane) * 2 + i;
          constexpr int W = WM * 32 * 2;  // stride between the warps' entries
          rs = __fadd_rn(__fadd_rn(rq[0], rq[W]), __fadd_rn(rq[2 * W], rq[3 * W]));
        }
        l_run[i] = __fmaf_rn(l_run[i], alpha[i], rs);
      }
#pragma unroll
      for (int d = 0; d < DTW; ++d) {
        o[d][0] = __fmaf_rn(o[d][0], alpha[0], 0.f);
        o[d][1] = __fmaf_rn(o[d][1], alpha[0], 0.f);
        o[d][2] = __fmaf_rn(o[d][2], alpha[1], 0.f);
        o[d][3] = __fmaf_rn(o[d][3], alpha[1], 0.f);
      }
      // O += P V over this warp's d-tiles, k-steps in key order. A single warp
      // packs P from its S accumulators (the layout of two n-tiles is the A
      // layout of one k-step); shared warps load the same bf16 values.
      if constexpr (kWgmma) {
#if FD_HAVE_WGMMA
        // The warpgroup's 64 rows x all HD columns: k-step kk is V's rows
        // [16 kk, +16), MN-major (each 64-column block's rows 128 bytes apart).
        uint32_t pf[KS][4];
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
          pf[kk][0] = pack_bf16(sc[2 * kk][0], sc[2 * kk][1]);
          pf[kk][1] = pack_bf16(sc[2 * kk][2], sc[2 * kk][3]);
          pf[kk][2] = pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
          pf[kk][3] = pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
        }
        float(&o_all)[DTW * 4] = reinterpret_cast<float(&)[DTW * 4]>(o);
        wgmma::fence();
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
          const uint64_t vd = wgmma::desc_sw128(smem_u32(tv) + kk * 16 * 128, kBN * 128, 1024);
          if constexpr (HD == 128)
            wgmma::m64n128k16_rs<1>(o_all, pf[kk][0], pf[kk][1], pf[kk][2], pf[kk][3], vd);
          else
            wgmma::m64n64k16_rs<1>(o_all, pf[kk][0], pf[kk][1], pf[kk][2], pf[kk][3], vd);
        }
        wgmma::commit();
        wgmma::wait();
#endif
      } else {
#pragma unroll
        for (int kk = 0; kk < KS; ++kk) {
          uint32_t a0, a1, a2, a3;
          if constexpr (WK == 1) {
            a0 = pack_bf16(sc[2 * kk][0], sc[2 * kk][1]);
            a1 = pack_bf16(sc[2 * kk][2], sc[2 * kk][3]);
            a2 = pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
            a3 = pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
          } else {
            ldsm_x4(smem_u32(sP + swz<kBN>(wm * 16 + (lane & 15), 2 * kk + (lane >> 4))), a0, a1, a2, a3);
          }
          const int vrow = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
          for (int dd = 0; dd < DTW / 2; ++dd) {
            uint32_t b0, b1, b2, b3;
            ldsm_x4_t(tile_addr(tv, vrow, (dt0 / 2 + dd) * 2 + (lane >> 4), kBN), b0, b1, b2, b3);
            mma_bf16(o[2 * dd], a0, a1, a2, a3, b0, b1);
            mma_bf16(o[2 * dd + 1], a0, a1, a2, a3, b2, b3);
          }
        }
      }
    }
    if constexpr (kWgmma) mbar_arrive(empty + buf);  // this thread is done with tile t
    // A split ends with the key range or before a tile of the next split.
    const bool split_ends = kb + kBN == next_split_key;
    if (t + 1 == n_tiles || split_ends) {
      if (live) finish_split(cur_slot);
      ++cur_slot;
    }
    if (split_ends) next_split_key = p.splits.begin(++split + 1);
  }

  if (p.groups > 1) {
    mark_empty(cur_slot, slot_end);  // splits of the group past the key range
    return;
  }
  // ---- fold mode epilogue: the normalised bf16 output ----
  if (!live) return;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int m = m0 + ra + 8 * i;
    if (m > m_last) continue;
    const int r = m / G, h = kvh * G + m % G;
    bf16* dst = p.out + static_cast<int64_t>(row0 + r) * p.out_ld + h * HD + dt0 * 8 + c0;
    const float inv_l = __frcp_rn(l_acc[i]);
#pragma unroll
    for (int d = 0; d < DTW; ++d)
      *reinterpret_cast<__nv_bfloat162*>(dst + d * 8) = __floats2bfloat162_rn(
          fold_result(facc[d][2 * i], l_acc[i], inv_l), fold_result(facc[d][2 * i + 1], l_acc[i], inv_l));
  }
}

// ---- host side ----

thread_local PagedAttentionPlan g_last_plan;

constexpr int kMaxDevices = 16;

// Each instantiation needs its shared-memory limit raised, once per device
// and size (a launch may ask for more than the kernel uses, see launch()).
template <int HD, int WM, int WK, int STAGES>
void prepare_kernel(int dev, int bytes) {
  static int raised[kMaxDevices] = {};
  if (raised[dev] < bytes) {
    cudaError_t e = cudaFuncSetAttribute(paged_attention_kernel<HD, WM, WK, STAGES>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess) throw Error(std::string("paged_attention: kernel setup: ") + cudaGetErrorString(e));
    raised[dev] = bytes;
  }
}

void check_tensor(const Tensor& t, const char* name, int64_t min_cols) {
  if (t.dtype != DType::BF16 || t.device != Device::CUDA)
    throw Error(std::string("paged_attention: ") + name + " must be a bf16 CUDA tensor");
  if (t.cols < min_cols)
    throw Error(std::string("paged_attention: ") + name + " has " + std::to_string(t.cols) + " columns, needs " +
                std::to_string(min_cols));
  if (t.ld % 8 != 0 || reinterpret_cast<uintptr_t>(t.data) % 16 != 0)
    throw Error(std::string("paged_attention: ") + name +
                " needs a row stride that is a multiple of 8 elements and 16-byte aligned data");
}

template <int HD, int WM, int WK>
void launch(Params& prm, const AttnBatch& batch, const attention::LaunchPlan& L, int dev, AttentionWorkspace& ws,
            cudaStream_t stream) {
  constexpr int kStages = stages_of(WM, WK);
  using C = Cfg<HD, WM, WK, kStages>;
  prm.m_tiles = L.m_tiles;
  const int64_t groups = L.grouping.groups;
  prm.groups = static_cast<int>(groups);
  prm.group_keys = static_cast<int>(L.grouping.group_keys);
  prm.fit_most[0] = L.grouping.fit_most[0];
  prm.fit_most[1] = L.grouping.fit_most[1];
  const int64_t slots = L.slots;
  prm.slots = static_cast<int>(slots);
  if (groups > 1) {
    const size_t n_o = static_cast<size_t>(slots) * batch.n_rows * prm.n_heads;
    const size_t need = n_o * HD * sizeof(float) + n_o * sizeof(float2) + 256;
    if (ws.bytes < need) {
      if (ws.data) ws.retired.push_back(ws.data);
      ws.data = nullptr;
      ws.bytes = 0;
      const size_t grow = need + need / 4;
      cudaError_t e = cudaMalloc(&ws.data, grow);
      if (e != cudaSuccess) throw Error(std::string("paged_attention: workspace cudaMalloc: ") + cudaGetErrorString(e));
      ws.bytes = grow;
    }
    prm.part_o = static_cast<float*>(ws.data);
    prm.part_ml = reinterpret_cast<float2*>(prm.part_o + n_o * HD);
  }

  const int64_t ctas = L.units * groups;
  if (ctas > 0x7fffffff) throw Error("paged_attention: batch too large for one grid");
  // Shared memory for per_sm CTAs and no more: over a (per_sm + 1)-th of
  // the multiprocessor's (each CTA also holds 1 KB the system reserves).
  const int smem = L.per_sm < C::kCtasPerSm
                       ? std::max(C::kSmem, device_limits(dev).smem_per_sm / (L.per_sm + 1) + 1)
                       : C::kSmem;
  prepare_kernel<HD, WM, WK, kStages>(dev, smem);
  {
    // (Measured on H100: launching the kv heads of one (sequence, split) as an
    // 8-CTA cluster, to read each pool block together, was 20-60% slower.)
    // A programmatic dependent: its CTAs look up their first blocks while
    // the kernel before (rope_store_kv) runs, and wait for it after.
    const KernelLaunch launch(dim3(static_cast<unsigned>(ctas)), dim3(C::kThreads), static_cast<size_t>(smem), stream,
                              true);
    const cudaError_t e = cudaLaunchKernelEx(&launch.config, paged_attention_kernel<HD, WM, WK, kStages>, prm);
    if (e != cudaSuccess) throw Error(std::string("paged_attention: launch: ") + cudaGetErrorString(e));
  }
  if (groups > 1) {
    const SplitReduceParams rp{prm.part_o,      prm.part_ml, prm.out,      prm.out_ld, batch.n_rows, prm.n_heads,
                               static_cast<int>(slots), batch.positions, prm.splits, prm.causal, prm.window,
                               batch.max_rows};
    launch_split_reduce(rp, HD, stream);
  }
}

template <int HD>
struct LaunchLayout {
  Params& prm;
  const AttnBatch& batch;
  const attention::LaunchPlan& L;
  int dev;
  AttentionWorkspace& ws;
  cudaStream_t stream;
  template <int WM, int WK>
  void run() {
    launch<HD, WM, WK>(prm, batch, L, dev, ws, stream);
  }
};

template <int HD>
void launch_hd(Params& prm, const attention::AttnShape& shape, const AttnBatch& batch, int64_t span,
               AttentionWorkspace& ws, cudaStream_t stream) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices)
    throw Error("paged_attention: no usable current CUDA device");
  const attention::LaunchPlan L = attention::plan_launch(shape, batch, span, device_limits(dev).sms);
  if (!attention::with_layout(10 * L.wm + L.wk, LaunchLayout<HD>{prm, batch, L, dev, ws, stream}))
    throw Error("paged_attention: no kernel for the warp layout " + std::to_string(L.wm) + " x " + std::to_string(L.wk));
  g_last_plan = attention::describe(L, shape);
}

}  // namespace

AttentionWorkspace::~AttentionWorkspace() {
  if (data) cudaFree(data);
  for (void* p : retired) cudaFree(p);
}

PagedAttentionPlan last_paged_attention_plan() { return g_last_plan; }

void paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                     const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads, int64_t n_kv_heads,
                     int64_t head_dim, float scale, AttentionWorkspace& workspace, cudaStream_t stream) {
  if (head_dim != 64 && head_dim != 128)
    throw Error("paged_attention: head_dim " + std::to_string(head_dim) + " (supported: 64, 128)");
  if (n_kv_heads <= 0 || n_heads <= 0 || n_heads % n_kv_heads != 0)
    throw Error("paged_attention: " + std::to_string(n_heads) + " query heads cannot share " +
                std::to_string(n_kv_heads) + " kv heads evenly");
  check_tensor(q, "q", n_heads * head_dim);
  check_tensor(out, "out", n_heads * head_dim);
  check_tensor(k_cache, "k_cache", n_kv_heads * head_dim);
  check_tensor(v_cache, "v_cache", n_kv_heads * head_dim);
  if (k_cache.ld != v_cache.ld) throw Error("paged_attention: k_cache and v_cache need the same row stride");
  // The kernel forms a pool row's byte offset from a 32-bit row stride.
  if (k_cache.ld > (int64_t{1} << 30))
    throw Error("paged_attention: a K/V pool row of " + std::to_string(k_cache.ld) + " elements is too long");
  if (batch.block_size <= 0) throw Error("paged_attention: block_size must be positive");
  // The row maximum is taken before scaling, which needs a positive scale.
  if (!(scale > 0.f) || !std::isfinite(scale))
    throw Error("paged_attention: scale must be positive and finite, got " + std::to_string(scale));
  if (batch.n_seqs <= 0 || batch.n_rows <= 0 || batch.max_rows <= 0) return;
  if (q.rows < batch.n_rows || out.rows < batch.n_rows)
    throw Error("paged_attention: q/out hold fewer rows than the batch");

  Params prm{};
  prm.q = q.as<const bf16>();
  prm.k = k_cache.as<const bf16>();
  prm.v = v_cache.as<const bf16>();
  prm.out = out.as<bf16>();
  prm.q_start = batch.q_start;
  prm.pos0 = batch.pos0;
  prm.block_tables = batch.block_tables;
  prm.q_ld = q.ld;
  prm.kv_ld = k_cache.ld;
  prm.out_ld = out.ld;
  prm.n_rows = batch.n_rows;
  prm.max_blocks = batch.max_blocks;
  prm.block_size = batch.block_size;
  prm.bs_shift = -1;
  for (int sh = 0; sh < 31; ++sh)
    if ((1 << sh) == batch.block_size) prm.bs_shift = sh;
  prm.scale_log2 = scale * 1.4426950408889634f;
  attention::AttnShape shape;
  const int64_t span = attention::attention_shape(shape, batch, mask, n_heads, n_kv_heads);
  prm.n_kv = shape.n_kv;
  prm.group = shape.group;
  prm.n_heads = shape.n_heads;
  prm.causal = shape.causal;
  prm.window = shape.window;
  prm.splits = shape.splits;

  if (head_dim == 64)
    launch_hd<64>(prm, shape, batch, span, workspace, stream);
  else
    launch_hd<128>(prm, shape, batch, span, workspace, stream);
}

}  // namespace flashdraft::ops::cuda
