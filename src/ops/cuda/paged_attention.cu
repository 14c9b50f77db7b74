// Paged attention on sm_90: one tensor-core kernel (mma.sync m16n8k16 bf16,
// f32 accumulate) for decode, verify/drafter blocks and prefill, optionally
// split along the key range (flash-decoding) with a small reduce kernel after.
//
// Work decomposition. GQA heads that share a kv head are packed into the M
// dimension together with the query rows (m = row * group + head_in_group), so
// each K/V tile is read from memory once per kv head, not once per query head.
// One CTA = (sequence, kv head, M tile of 16*WM entries, key split). WM warps
// own 16 M entries each; WK further warps split each K/V tile along the keys
// and are merged through shared memory at the end:
//   M <= 16 (decode, group <= 16)   1 x 4 warps
//   M <= 32                         2 x 2
//   M <= 64 (16-row blocks, g 4)    4 x 1
//   M > 64 (prefill)                8 x 1: 128 entries a CTA halve the K/V re-reads
//
// K/V tiles of 64 keys stream through a 3-stage cp.async ring, two CTAs per
// SM for the 4-warp layouts; batches too small to give every SM a CTA have
// their key range split until they do (a reduce kernel merges the splits).
// Each key row is
// gathered through the block table; keys outside the union of the CTA rows'
// visible ranges are neither looked up nor read (the smem row is zero-filled),
// so unowned or evicted slots (NaN in tests) never reach the P.V product, and
// scores are masked by selecting -inf (never by multiplying).
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "ops/cuda/paged_attention.h"

namespace flashdraft::ops::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kBN = 64;  // keys per pipeline tile
constexpr int64_t kSplitTiles = 8;  // tiles per key split (512 keys): fixed, see launch()
// K/V ring depth: 3 stages fit two 4-warp CTAs per SM. (Measured on H100: a
// 6-stage ring with one CTA per SM for small split batches was 2-7% slower.)
constexpr int kStagesShared = 3;
constexpr float kNegInf = -INFINITY;

struct Params {
  const bf16* q;
  const bf16* k;
  const bf16* v;
  bf16* out;
  float* part_o;    // [splits][n_rows][n_heads][HD], normalised by the split's own sum
  float* part_lse;  // [splits][n_rows][n_heads], log2 domain of scaled scores
  const int32_t* q_start;
  const int32_t* pos0;
  const int32_t* block_tables;
  int64_t q_ld, kv_ld, out_ld;
  int n_kv, group, n_heads, n_rows;
  int max_blocks, block_size, bs_shift;  // bs_shift >= 0 when block_size is a power of two
  int m_tiles, splits, chunk;            // chunk: keys per split, a multiple of kBN
  int causal, window;                    // window 0: none
  float scale_log2;
};

// ---- PTX wrappers ----

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// src_bytes 0 zero-fills the 16 smem bytes without touching global memory.
// (L2::128B / L2::256B prefetch hints measured no different on H100.)
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// ex2.approx of -inf is +0, which the masking relies on.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
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

// WM warps along M (16 entries each) x WK warps splitting each tile's keys.
template <int HD, int WM, int WK, int STAGES>
struct Cfg {
  static constexpr int kStages = STAGES;
  static constexpr int NW = WM * WK;
  static constexpr int kThreads = 32 * NW;
  static constexpr int RW = kBN / NW;  // tile rows each warp loads
  static constexpr int BM = 16 * WM;   // M entries per CTA
  static constexpr int KW = kBN / WK;  // keys per warp per tile
  static constexpr int NT = KW / 8;    // n-tiles of S per warp
  static constexpr int KS = KW / 16;   // k-steps of P.V per warp
  static constexpr int DT = HD / 8;    // n-tiles of O
  static constexpr int QK = HD / 16;   // k-steps of Q.K^T
  static constexpr int CH = HD / 8;    // 16-byte chunks per row
  static constexpr int kSmemQ = BM * HD * 2;
  static constexpr int kSmemStage = 2 * kBN * HD * 2;
  static constexpr int kSmem = kSmemQ + kStages * kSmemStage;
  static constexpr int kSmemReduce = (2 * NW * 16 + NW * DT * 4 * 32) * 4;
  static_assert(kSmemReduce <= kStages * kSmemStage, "cross-warp merge must fit in the K/V ring");
};

template <int HD, int WM, int WK, int STAGES>
__global__ void __launch_bounds__(32 * WM * WK, (WM * WK > 4 || STAGES > 3) ? 1 : 2)
    paged_attention_kernel(const Params p) {
  using C = Cfg<HD, WM, WK, STAGES>;
  constexpr int kStages = STAGES;
  constexpr int BM = C::BM, KW = C::KW, NT = C::NT, KS = C::KS, DT = C::DT, QK = C::QK, CH = C::CH, RW = C::RW;
  constexpr int kThreads = C::kThreads;

  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sK = reinterpret_cast<bf16*>(smem + C::kSmemQ);
  bf16* sV = sK + kStages * kBN * HD;

  // Let the split-KV reduce (a programmatic dependent launch) get scheduled as
  // soon as the last CTA of this grid is resident; it waits for our writes.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % WM, wk = warp / WM;

  // kv head fastest: neighbouring CTAs read the neighbouring 256-byte pieces of the same pool rows.
  int idx = blockIdx.x;
  const int kvh = idx % p.n_kv;
  idx /= p.n_kv;
  const int split = idx % p.splits;
  idx /= p.splits;
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
  const int lane_key = warp * RW + (lane % RW);  // the key (within a tile) whose slot this lane looks up
  int first_blk[kStages];
  if (p.window == 0) {
#pragma unroll
    for (int st = 0; st < kStages; ++st) first_blk[st] = load_block(split * p.chunk + st * kBN + lane_key);
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
  // Union of the visible ranges of this CTA's rows: only these keys are ever read.
  const int hi = p.causal ? p_last + 1 : kv_len;
  const int lo = p.window > 0 ? max(0, p_first - p.window + 1) : 0;
  const int k_begin = (lo / kBN) * kBN + split * p.chunk;
  const int k_end = min(k_begin + p.chunk, hi);

  if (k_begin >= k_end) {
    // An empty split still says so, for the reduce.
    for (int m = m0 + tid; m <= m_last; m += kThreads) {
      const int r = m / G, h = kvh * G + m % G;
      p.part_lse[(static_cast<int64_t>(split) * p.n_rows + row0 + r) * p.n_heads + h] = kNegInf;
    }
    return;
  }
  const int n_tiles = (k_end - k_begin + kBN - 1) / kBN;
  // A tile needs per-element masking unless every key in it is visible to every row of the CTA.
  const int lo_all = p.window > 0 ? p_last - p.window + 1 : 0;
  const int hi_all = p.causal ? p_first : kv_len - 1;
  if (p.window != 0) {
#pragma unroll
    for (int st = 0; st < kStages; ++st) first_blk[st] = load_block(k_begin + st * kBN + lane_key);
  }

  // ---- Q tile (M entries x HD), rows past the sequence zero-filled ----
  {
    const bf16* qbase = p.q + kvh * G * HD;
    for (int i = tid; i < BM * CH; i += kThreads) {
      const int ml = i / CH, c = i % CH, m = m0 + ml;
      const bool ok = m < M;
      const bf16* src = ok ? qbase + (row0 + m / G) * p.q_ld + (m % G) * HD + c * 8 : p.q;
      cp_async16(smem_u32(sQ + swz<HD>(ml, c)), src, ok ? 16 : 0);
    }
  }

  // ---- K/V tile loader: warp w fills tile rows [RW*w, RW*w + RW) ----
  const bf16* kbase = p.k + kvh * HD;
  const bf16* vbase = p.v + kvh * HD;
  // Lane l (mod RW) looks up key RW*warp + l of a tile; the lookup for the
  // next tile is issued one iteration early so its latency hides behind math.
  int pf_j = 0, pf_blk = 0;
  auto prefetch_slot = [&](int tile) {
    pf_j = k_begin + tile * kBN + lane_key;
    pf_blk = load_block(pf_j);
  };
  auto issue_tile = [&](int buf) {
    // Keys outside [lo, hi) are never read: their smem rows are zero-filled.
    const bool ok = pf_j >= lo && pf_j < hi;
    const int slot = ok ? pf_blk * p.block_size + (pf_j - table_block(pf_j) * p.block_size) : -1;
    constexpr int RP = 32 / CH;  // rows per warp instruction
    const int c = lane % CH, rsub = lane / CH;
    bf16* dk = sK + buf * kBN * HD;
    bf16* dv = sV + buf * kBN * HD;
#pragma unroll
    for (int ps = 0; ps < RW / RP; ++ps) {
      const int r = ps * RP + rsub;
      const int sl = __shfl_sync(0xffffffffu, slot, r);
      const int row = warp * RW + r;
      const int64_t off = static_cast<int64_t>(sl) * p.kv_ld + c * 8;
      const int bytes = sl >= 0 ? 16 : 0;
      cp_async16(smem_u32(dk + swz<HD>(row, c)), sl >= 0 ? kbase + off : p.k, bytes);
      cp_async16(smem_u32(dv + swz<HD>(row, c)), sl >= 0 ? vbase + off : p.v, bytes);
    }
  };

#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < n_tiles) {
      pf_j = k_begin + st * kBN + lane_key;
      pf_blk = first_blk[st];
      issue_tile(st);
    }
    cp_async_commit();
  }
  pf_j = k_begin + (kStages - 1) * kBN + lane_key;
  pf_blk = first_blk[kStages - 1];

  // Positions of this thread's two M rows (padding rows borrow the last real one).
  const int ma = min(m0 + wm * 16 + (lane >> 2), m_last);
  const int mb = min(m0 + wm * 16 + (lane >> 2) + 8, m_last);
  const int pa = pos0 + ma / G, pb = pos0 + mb / G;

  uint32_t qf[QK][4];
  float o[DT][4];
#pragma unroll
  for (int d = 0; d < DT; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  float m_run[2] = {kNegInf, kNegInf}, l_run[2] = {0.f, 0.f};

  for (int t = 0; t < n_tiles; ++t) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile t landed for all; everyone is done with tile t - 1's buffer
    {
      const int tn = t + kStages - 1;
      if (tn < n_tiles) {
        issue_tile(tn % kStages);
        if (tn + 1 < n_tiles) prefetch_slot(tn + 1);
      }
      cp_async_commit();
    }
    if (t == 0) {
#pragma unroll
      for (int ks = 0; ks < QK; ++ks)
        ldsm_x4(smem_u32(sQ + swz<HD>(wm * 16 + (lane & 15), ks * 2 + (lane >> 4))), qf[ks][0], qf[ks][1], qf[ks][2],
                qf[ks][3]);
    }
    const int buf = t % kStages;
    const bf16* tk = sK + buf * kBN * HD;
    const bf16* tv = sV + buf * kBN * HD;
    const int kw0 = wk * KW;  // this warp's first key within the tile

    // S = Q K^T for this warp's 16 M rows x KW keys.
    float sc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < QK / 2; ++kk) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4(smem_u32(tk + swz<HD>(kw0 + nt * 8 + (lane & 7), kk * 4 + (lane >> 3))), b0, b1, b2, b3);
        mma_bf16(sc[nt], qf[2 * kk][0], qf[2 * kk][1], qf[2 * kk][2], qf[2 * kk][3], b0, b1);
        mma_bf16(sc[nt], qf[2 * kk + 1][0], qf[2 * kk + 1][1], qf[2 * kk + 1][2], qf[2 * kk + 1][3], b2, b3);
      }
    }

    // Scale into the log2 domain; mask by position with a select.
    const int kb = k_begin + t * kBN;
    const bool need_mask = !(kb >= lo_all && kb + kBN - 1 <= hi_all);
    float mx[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = sc[nt][e] * p.scale_log2;
        if (need_mask) {
          const int j = kb + kw0 + nt * 8 + 2 * (lane & 3) + (e & 1);
          const int pq = e < 2 ? pa : pb;
          const bool vis = j < kv_len && (!p.causal || j <= pq) && (p.window == 0 || j > pq - p.window);
          x = vis ? x : kNegInf;
        }
        sc[nt][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
      }
    }
    float alpha[2], m_use[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
      const float m_new = fmaxf(m_run[i], mx[i]);
      // A row that has seen nothing yet keeps -inf; subtract 0 instead so no inf - inf appears.
      m_use[i] = m_new == kNegInf ? 0.f : m_new;
      alpha[i] = fast_exp2(m_run[i] - m_use[i]);
      m_run[i] = m_new;
    }
    float rs[2] = {0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float pe = fast_exp2(sc[nt][e] - m_use[e >> 1]);
        sc[nt][e] = pe;
        rs[e >> 1] += pe;
      }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) l_run[i] = l_run[i] * alpha[i] + rs[i];
#pragma unroll
    for (int d = 0; d < DT; ++d) {
      o[d][0] *= alpha[0];
      o[d][1] *= alpha[0];
      o[d][2] *= alpha[1];
      o[d][3] *= alpha[1];
    }

    // O += P V: the S accumulator layout of two n-tiles is the A layout of one k-step.
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      const uint32_t a0 = pack_bf16(sc[2 * kk][0], sc[2 * kk][1]);
      const uint32_t a1 = pack_bf16(sc[2 * kk][2], sc[2 * kk][3]);
      const uint32_t a2 = pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
      const uint32_t a3 = pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
      const int vrow = kw0 + kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
      for (int dd = 0; dd < DT / 2; ++dd) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4_t(smem_u32(tv + swz<HD>(vrow, dd * 2 + (lane >> 4))), b0, b1, b2, b3);
        mma_bf16(o[2 * dd], a0, a1, a2, a3, b0, b1);
        mma_bf16(o[2 * dd + 1], a0, a1, a2, a3, b2, b3);
      }
    }
  }

#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], 1);
    l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], 2);
  }

  if constexpr (WK > 1) {
    // Merge the WK warps that split the keys of the same M rows (reusing the K/V ring).
    cp_async_wait<0>();
    __syncthreads();
    float* red_m = reinterpret_cast<float*>(smem + C::kSmemQ);
    float* red_l = red_m + C::NW * 16;
    float* red_o = red_l + C::NW * 16;
    const int ra = lane >> 2;
    if ((lane & 3) == 0) {
      red_m[warp * 16 + ra] = m_run[0];
      red_m[warp * 16 + ra + 8] = m_run[1];
      red_l[warp * 16 + ra] = l_run[0];
      red_l[warp * 16 + ra + 8] = l_run[1];
    }
    __syncthreads();
    float f[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = ra + 8 * i;
      float mall = kNegInf;
#pragma unroll
      for (int w = 0; w < WK; ++w) mall = fmaxf(mall, red_m[(wm + w * WM) * 16 + r]);
      float lall = 0.f;
#pragma unroll
      for (int w = 0; w < WK; ++w) {
        const float mw = red_m[(wm + w * WM) * 16 + r];
        lall += mw == kNegInf ? 0.f : red_l[(wm + w * WM) * 16 + r] * fast_exp2(mw - mall);
      }
      f[i] = m_run[i] == kNegInf ? 0.f : fast_exp2(m_run[i] - mall);
      m_run[i] = mall;
      l_run[i] = lall;
    }
#pragma unroll
    for (int d = 0; d < DT; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) red_o[((warp * DT + d) * 4 + e) * 32 + lane] = o[d][e] * f[e >> 1];
    __syncthreads();
    if (wk != 0) return;
#pragma unroll
    for (int d = 0; d < DT; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float acc = 0.f;
#pragma unroll
        for (int w = 0; w < WK; ++w) acc += red_o[(((wm + w * WM) * DT + d) * 4 + e) * 32 + lane];
        o[d][e] = acc;
      }
  }

  // ---- epilogue: bf16 output, or this split's normalised partial + log-sum-exp ----
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int m = m0 + wm * 16 + (lane >> 2) + 8 * i;
    if (m > m_last) continue;
    const int r = m / G, h = kvh * G + m % G;
    const float l = l_run[i];
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const int c0 = 2 * (lane & 3);
    if (p.splits == 1) {
      bf16* dst = p.out + static_cast<int64_t>(row0 + r) * p.out_ld + h * HD + c0;
#pragma unroll
      for (int d = 0; d < DT; ++d)
        *reinterpret_cast<__nv_bfloat162*>(dst + d * 8) =
            __floats2bfloat162_rn(o[d][2 * i] * inv, o[d][2 * i + 1] * inv);
    } else {
      const int64_t ri = (static_cast<int64_t>(split) * p.n_rows + row0 + r) * p.n_heads + h;
      float* dst = p.part_o + ri * HD + c0;
#pragma unroll
      for (int d = 0; d < DT; ++d)
        *reinterpret_cast<float2*>(dst + d * 8) = make_float2(o[d][2 * i] * inv, o[d][2 * i + 1] * inv);
      if ((lane & 3) == 0) p.part_lse[ri] = l > 0.f ? m_run[i] + __log2f(l) : kNegInf;
    }
  }
}

// One CTA per (row, head); its 8 warps take every 8th split so the loads of all
// splits are in flight at once (the reduce sits on the critical path of a
// one-wave decode). Weights are 2^(lse_i - max); empty splits (lse -inf,
// weight 0) are selected away, never multiplied by 0: their partial rows were
// not written.
constexpr int kReduceWarps = 8;
template <int HD>
__global__ void __launch_bounds__(32 * kReduceWarps)
    paged_attention_reduce_kernel(const float* __restrict__ part_o, const float* __restrict__ part_lse,
                                  bf16* __restrict__ out, int64_t out_ld, int n_rows, int n_heads, int splits) {
  // Launched as a programmatic dependent: it may start while the attention grid drains.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  constexpr int PER = HD / 32;
  __shared__ float s_acc[kReduceWarps][HD];
  __shared__ float s_w[kReduceWarps];
  const int w = blockIdx.x;  // row * n_heads + head
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row = w / n_heads, h = w % n_heads;
  const int64_t stride = static_cast<int64_t>(n_rows) * n_heads;
  float mx = kNegInf;
  for (int i = lane; i < splits; i += 32) mx = fmaxf(mx, __ldcg(part_lse + i * stride + w));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float acc[PER] = {};
  float wsum = 0.f;
#pragma unroll 4
  for (int i = warp; i < splits; i += kReduceWarps) {
    const float l = __ldcg(part_lse + i * stride + w);
    const float* src = part_o + (i * stride + w) * HD + lane * PER;
    float v[PER];
    if constexpr (PER == 4) {
      const float4 x = __ldcg(reinterpret_cast<const float4*>(src));
      v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else {
      const float2 x = __ldcg(reinterpret_cast<const float2*>(src));
      v[0] = x.x, v[1] = x.y;
    }
    const float wt = l == kNegInf ? 0.f : fast_exp2(l - mx);
    wsum += wt;
#pragma unroll
    for (int e = 0; e < PER; ++e) acc[e] += wt > 0.f ? wt * v[e] : 0.f;
  }
#pragma unroll
  for (int e = 0; e < PER; ++e) s_acc[warp][lane * PER + e] = acc[e];
  if (lane == 0) s_w[warp] = wsum;
  __syncthreads();
  if (warp != 0) return;
  float tot = 0.f;
#pragma unroll
  for (int g = 0; g < kReduceWarps; ++g) tot += s_w[g];
  const float inv = tot > 0.f ? 1.f / tot : 0.f;
  float r[PER];
#pragma unroll
  for (int e = 0; e < PER; ++e) {
    r[e] = 0.f;
#pragma unroll
    for (int g = 0; g < kReduceWarps; ++g) r[e] += s_acc[g][lane * PER + e];
  }
  bf16* dst = out + static_cast<int64_t>(row) * out_ld + h * HD + lane * PER;
#pragma unroll
  for (int e = 0; e < PER; e += 2)
    *reinterpret_cast<__nv_bfloat162*>(dst + e) = __floats2bfloat162_rn(r[e] * inv, r[e + 1] * inv);
}

// ---- host side ----

int g_forced_splits = 0;
thread_local PagedAttentionPlan g_last_plan;

constexpr int kMaxDevices = 16;

// Each instantiation needs its shared-memory limit raised once per device.
template <int HD, int WM, int WK, int STAGES>
void prepare_kernel(int dev) {
  static bool ready[kMaxDevices] = {};
  if (!ready[dev]) {
    cudaError_t e = cudaFuncSetAttribute(paged_attention_kernel<HD, WM, WK, STAGES>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<HD, WM, WK, STAGES>::kSmem);
    if (e != cudaSuccess) throw Error(std::string("paged_attention: kernel setup: ") + cudaGetErrorString(e));
    ready[dev] = true;
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

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <int HD, int WM, int WK, int STAGES>
void launch_attention(const Params& prm, int64_t ctas, cudaStream_t stream) {
  using C = Cfg<HD, WM, WK, STAGES>;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(ctas));
  cfg.blockDim = dim3(C::kThreads);
  cfg.dynamicSmemBytes = C::kSmem;
  cfg.stream = stream;
  // (Measured on H100: launching the kv heads of one (sequence, split) as an
  // 8-CTA cluster, to read each pool block together, was 20-60% slower.)
  cfg.numAttrs = 0;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, paged_attention_kernel<HD, WM, WK, STAGES>, prm);
  if (e != cudaSuccess) throw Error(std::string("paged_attention: launch: ") + cudaGetErrorString(e));
}

template <int HD, int WM, int WK>
void launch(Params& prm, const AttnBatch& batch, int64_t span, AttentionWorkspace& ws, cudaStream_t stream) {
  constexpr int BM = 16 * WM;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices)
    throw Error("paged_attention: no usable current CUDA device");

  prm.m_tiles = static_cast<int>(ceil_div(static_cast<int64_t>(batch.max_rows) * prm.group, BM));
  const int64_t base = static_cast<int64_t>(batch.n_seqs) * prm.n_kv * prm.m_tiles;
  const int64_t span_tiles = std::max<int64_t>(1, ceil_div(span, kBN));

  // Batch invariance: split boundaries are fixed key positions (every
  // kSplitTiles tiles), never sized to the batch or the SM count, so a row's
  // partial sums and their reduce are the same alone, in a 16-row block or
  // among other requests; keys past a row only add empty splits (weight 0).
  // (Sizing splits to fill the SMs was up to ~1.5x faster at batch 1, 32k.)
  const int64_t chunk_tiles = g_forced_splits > 0 ? ceil_div(span_tiles, g_forced_splits) : kSplitTiles;
  const int64_t splits = ceil_div(span_tiles, chunk_tiles);
  prm.splits = static_cast<int>(splits);
  prm.chunk = static_cast<int>(chunk_tiles * kBN);

  if (splits > 1) {
    const size_t n_o = static_cast<size_t>(splits) * batch.n_rows * prm.n_heads;
    const size_t need = n_o * HD * sizeof(float) + n_o * sizeof(float) + 256;
    if (ws.bytes < need) {
      if (ws.data) cudaFree(ws.data);
      ws.data = nullptr;
      ws.bytes = 0;
      const size_t grow = need + need / 4;
      cudaError_t e = cudaMalloc(&ws.data, grow);
      if (e != cudaSuccess) throw Error(std::string("paged_attention: workspace cudaMalloc: ") + cudaGetErrorString(e));
      ws.bytes = grow;
    }
    prm.part_o = static_cast<float*>(ws.data);
    prm.part_lse = prm.part_o + n_o * HD;
  }

  const int64_t ctas = base * splits;
  if (ctas > 0x7fffffff) throw Error("paged_attention: batch too large for one grid");
  g_last_plan = PagedAttentionPlan{BM, prm.m_tiles, prm.splits, prm.chunk, static_cast<int>(ctas), kStagesShared};
  prepare_kernel<HD, WM, WK, kStagesShared>(dev);
  launch_attention<HD, WM, WK, kStagesShared>(prm, ctas, stream);
  if (splits > 1) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(static_cast<unsigned>(static_cast<int64_t>(batch.n_rows) * prm.n_heads));
    cfg.blockDim = dim3(32 * kReduceWarps);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    const cudaError_t e = cudaLaunchKernelEx(
        &cfg, paged_attention_reduce_kernel<HD>, static_cast<const float*>(prm.part_o),
        static_cast<const float*>(prm.part_lse), prm.out, prm.out_ld, batch.n_rows, prm.n_heads, prm.splits);
    if (e != cudaSuccess) throw Error(std::string("paged_attention: reduce launch: ") + cudaGetErrorString(e));
  }
}

template <int HD>
void launch_hd(Params& prm, const AttnBatch& batch, int64_t span, AttentionWorkspace& ws, cudaStream_t stream) {
  // M = GQA heads x query rows of the longest sequence: decode packs into one
  // 16-entry tile (4 warps split the keys), blocks into 64 (a warp per 16),
  // prefill into 128-entry tiles (8 warps) to halve the K/V re-reads.
  // Batch invariance: one warp always takes a tile's keys whole (WK = 1),
  // so an entry's sums run in the same order whatever tile shape it lands in.
  const int64_t m = static_cast<int64_t>(batch.max_rows) * prm.group;
  if (m <= 32)
    launch<HD, 2, 1>(prm, batch, span, ws, stream);
  else if (m <= 64)
    launch<HD, 4, 1>(prm, batch, span, ws, stream);
  else
    launch<HD, 8, 1>(prm, batch, span, ws, stream);
}

}  // namespace

AttentionWorkspace::~AttentionWorkspace() {
  if (data) cudaFree(data);
}

void set_paged_attention_forced_splits(int splits) { g_forced_splits = std::max(0, splits); }

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
  if (batch.block_size <= 0) throw Error("paged_attention: block_size must be positive");
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
  prm.n_kv = static_cast<int>(n_kv_heads);
  prm.group = static_cast<int>(n_heads / n_kv_heads);
  prm.n_heads = static_cast<int>(n_heads);
  prm.n_rows = batch.n_rows;
  prm.max_blocks = batch.max_blocks;
  prm.block_size = batch.block_size;
  prm.bs_shift = -1;
  for (int sh = 0; sh < 31; ++sh)
    if ((1 << sh) == batch.block_size) prm.bs_shift = sh;
  prm.causal = mask.causal ? 1 : 0;
  // A window at least as long as every key range hides nothing.
  const int64_t max_keys = std::max<int64_t>(1, batch.max_keys);
  prm.window = (mask.window <= 0 || mask.window >= max_keys) ? 0 : static_cast<int>(mask.window);
  prm.scale_log2 = scale * 1.4426950408889634f;

  // Longest key range one CTA can be given (window: its rows' window plus alignment slack).
  int64_t span = max_keys;
  if (prm.window > 0) span = std::min<int64_t>(max_keys, prm.window + batch.max_rows + kBN);

  if (head_dim == 64)
    launch_hd<64>(prm, batch, span, workspace, stream);
  else
    launch_hd<128>(prm, batch, span, workspace, stream);
}

}  // namespace flashdraft::ops::cuda
