// The tiled GEMM kernel (one template, five tile shapes): cp.async pipelines
// x and w tiles into shared memory, each warp reads its fragments with
// 16-byte loads (ldmatrix for a tiled weight) and chains mma_block32
// (gemm_invariant.cuh). For a few rows (Rows16) the same kernel is a weight
// streamer: 128 weight rows per block, 3 tiles in flight, split over slices
// of K (one cluster of blocks per output tile) when the weight has too few
// rows to fill the GPU; that split's fold (gemm_split_fold.cuh) can also
// finish rope_store_kv's or silu_glu's work on the tile (rope_fold, glu_fold:
// decode and verify rows need no kernel of their own for it). For more rows on a tiled weight,
// Rows64, Rows128 and Rows192 run as one, two or three warpgroups issuing
// wgmma over the same chain, fed by one more that only loads; outside
// Split mode those blocks are persistent, each walking its share of the
// tiles (H200, M = 2048: 418-503 TFLOP/s against ~200 with mma.sync;
// bench/gemm_proto.sh prefill, bench/gemm_notes.md).
// Over a WeightQuant::Fp8 weight the streamer (FP8) reads the fp8 codes
// instead of the bf16 tiles, half the bytes, and widens each lane's
// fragments to the very bf16 values the tiles hold (fp8_pair), so the chain
// and every bit of y stay those of the bf16 path.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include <cooperative_groups.h>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/gemm_invariant.cuh"
#include "ops/cuda/gemm_split_fold.cuh"
#include "ops/cuda/gemm_tiles.h"
#include "ops/cuda/kernel_launch.h"
#include "ops/cuda/matmul_tiles.h"
#include "ops/cuda/mbarrier.cuh"

namespace flashdraft::ops::cuda {
namespace {

namespace cg = cooperative_groups;
using gemm::kBlockK;
using gemm::kTileK;
using bf16 = __nv_bfloat16;

// Build-time knobs for tuning runs (bench/gemm_proto.sh); the defaults measured
// best on an H100: Rows16's pipeline depth; its blocks per multiprocessor asked
// of the register allocator (3, on the H200: the glu fold took 104 registers
// a thread, 2 blocks, and a 16-row gate_up's 384 blocks ran in 1.5 waves;
// plain step 4.85-4.88 -> 4.65 ms at 1k, batch 1); Rows128's warps along n, depth, k's
// per tile and blocks per multiprocessor; the 128-row wgmma tile's depth (4
// on the H200; 5 had measured best while ptxas serialized its wgmmas), the
// 192-row one's (3: 2 measured slower, 4 does not fit beside its folded
// totals), the 64-row one's (FD_GEMM_WG64 0: Rows64 runs mma.sync; 4 stages,
// two blocks a multiprocessor: 3 were even), and their producer
// (FD_GEMM_WGMMA 0: no wgmma); programmatic
// dependent launch; the L2 prefetch of weight copies (256 B: each weight
// row's next tile is on its way with the current one); persistent producer
// kernels outside Split mode (FD_GEMM_PERSISTENT 0: a block a tile); the
// 128-row wgmma tile's running totals of its first FD_GEMM_REG_TOTAL_NT n
// tiles (of 16) kept in registers instead of shared memory (8, 150
// registers: 1-4% faster at M = 2048 than 0 or 16 on the H200, and 16 with
// the freed shared memory as two more stages slower; bench/gemm_notes.md,
// "Register totals"). None of them changes a bit of the result.
#ifndef FD_GEMM_STAGES
#define FD_GEMM_STAGES 4
#endif
#ifndef FD_GEMM_R16_MINB
#define FD_GEMM_R16_MINB 3
#endif
#ifndef FD_GEMM_R128_WN
#define FD_GEMM_R128_WN 4
#endif
#ifndef FD_GEMM_R128_STAGES
#define FD_GEMM_R128_STAGES 3
#endif
#ifndef FD_GEMM_R128_BK
#define FD_GEMM_R128_BK 32
#endif
#ifndef FD_GEMM_R128_MINB
#define FD_GEMM_R128_MINB 2
#endif
#ifndef FD_GEMM_WG_STAGES
#define FD_GEMM_WG_STAGES 4
#endif
#ifndef FD_GEMM_WGMMA
#define FD_GEMM_WGMMA 1
#endif
#ifndef FD_GEMM_WG64
#define FD_GEMM_WG64 1
#endif
#ifndef FD_GEMM_WG64_STAGES
#define FD_GEMM_WG64_STAGES 4
#endif
#ifndef FD_GEMM_WG64_MINB
#define FD_GEMM_WG64_MINB 2
#endif
#ifndef FD_GEMM_WG192_STAGES
#define FD_GEMM_WG192_STAGES 3
#endif
#ifndef FD_GEMM_WG_PRODUCER
#define FD_GEMM_WG_PRODUCER 1
#endif
#ifndef FD_GEMM_PDL
#define FD_GEMM_PDL 1
#endif
#ifndef FD_GEMM_REG_TOTAL_NT
#define FD_GEMM_REG_TOTAL_NT 8
#endif
#ifndef FD_GEMM_PERSISTENT
#define FD_GEMM_PERSISTENT 1
#endif
#ifndef FD_GEMM_L2_PREFETCH
#define FD_GEMM_L2_PREFETCH ".L2::256B"
#endif

constexpr int kProducerThreads = 128;

// BM x BN output tile per block, WM x WN warps, STAGES tiles of BK k's in
// flight (BK 32 or 64: slices, multiples of 64, are whole tiles either way),
// MIN_BLOCKS per multiprocessor asked of the register allocator.
// WGMMA: each 4 warps along M are one warpgroup that multiplies its 64 rows
// by the whole w tile with wgmma (tiled weights on sm_90a; the same bits as
// the mma.sync chain, gemm_invariant.cuh), which needs WN = 1, 16 rows a warp.
// PRODUCER: one more warpgroup only loads (a tiled weight's stages).
// W_BYTES: bytes of a w element in shared memory (1: fp8 codes, whose stages
// span two 64-k tiles: BK 128).
template <int BM_, int BN_, int WM_, int WN_, int STAGES_, int BK_ = kTileK, int MIN_BLOCKS_ = 1, bool WGMMA_ = false,
          bool PRODUCER_ = false, int W_BYTES_ = 2>
struct Shape {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, STAGES = STAGES_, BK = BK_;
  static constexpr int MIN_BLOCKS = MIN_BLOCKS_, W_BYTES = W_BYTES_;
  static constexpr bool WGMMA = WGMMA_, PRODUCER = PRODUCER_;
  static_assert(BK % kBlockK == 0 && (kTileK % BK == 0 || (W_BYTES == 1 && BK == 2 * kTileK)),
                "slices must be whole tiles");
  static_assert(BN == kStripRows && kTileK == kStripTileK && kBlockK * 2 == kStripTileK,
                "a stage's w tile must be a whole piece of a tiled weight's strip (matmul_tiles.h)");
  static constexpr int kThreads = WM * WN * 32;  // the threads that multiply
  static constexpr int kBlockThreads = kThreads + (PRODUCER ? kProducerThreads : 0);
  static constexpr int kWarpRows = BM / WM, kWarpCols = BN / WN;
  static constexpr int MT = kWarpRows / 16, NT = kWarpCols / 8;  // mma tiles per warp
  // A stage: x tile then w tile, each as two planes (the tile's two chain
  // blocks) of rows x 64 bytes, so the 8 rows a warp reads at once are 512
  // contiguous bytes (no bank conflicts without swizzling). A tiled weight's
  // w tile is its own bytes instead (core matrices, matmul_tiles.h), read by
  // ldmatrix: 8 rows of 16 bytes a phase, conflict-free too.
  static constexpr int kXBytes = BM * BK * 2, kStageBytes = kXBytes + BN * BK * W_BYTES;
  static constexpr int kSmemBytes = STAGES * kStageBytes;
  // Folded mode keeps each thread's running total in shared memory (words
  // [element][thread], conflict-free) rather than in a second set of
  // registers (but for kRegNT n tiles, below).
  // The 128-row wgmma tile can keep its first kRegNT n tiles' totals in
  // registers instead (FD_GEMM_REG_TOTAL_NT), and needs room for the rest only.
  static constexpr int kRegNT = WGMMA && WM == 8 ? FD_GEMM_REG_TOTAL_NT : 0;
  static_assert(kRegNT >= 0 && kRegNT <= NT, "FD_GEMM_REG_TOTAL_NT: 0 to 16");
  static constexpr int kTotalBytes = kThreads * MT * (NT - kRegNT) * 4 * 4;
  // Split mode's partial tile, in the stages' memory once the pipeline is done.
  static constexpr int kPartialLd = BN + 4;
  static constexpr int kSplitSmemBytes = BM * kPartialLd * 4 > kSmemBytes ? BM * kPartialLd * 4 : kSmemBytes;
  // The producer's stage barriers ("full", "empty"), past everything else (smem_bytes).
  static constexpr int kBarrierBytes = PRODUCER ? 2 * STAGES * 8 : 0;
  static_assert(MT >= 1 && NT >= 1 && kWarpRows % 16 == 0 && kWarpCols % 8 == 0, "bad warp tile");
  static_assert(!WGMMA || (WN == 1 && MT == 1 && WM % 4 == 0 && BN == 128), "a warpgroup takes 64 rows x 128 columns");
  static_assert(!PRODUCER || WGMMA, "the producer feeds wgmma shapes");
};

template <GemmTile>
struct ShapeOf;
template <>
struct ShapeOf<GemmTile::Rows16> : Shape<16, 128, 1, 8, FD_GEMM_STAGES, kTileK, FD_GEMM_R16_MINB> {};
template <>
struct ShapeOf<GemmTile::Rows32> : Shape<32, 128, 1, 8, 3> {};
template <>
struct ShapeOf<GemmTile::Rows64> : Shape<64, 128, 2, 4, 3> {};
template <>
struct ShapeOf<GemmTile::Rows128>
    : Shape<128, 128, 2, FD_GEMM_R128_WN, FD_GEMM_R128_STAGES, FD_GEMM_R128_BK, FD_GEMM_R128_MINB> {};
// Rows16 over fp8 codes: a stage is two 64-k tiles (16 KB, as a bf16 stage
// of one), so a block walks its slice in half the steps; 3 stages keep three
// blocks a multiprocessor, as Rows16 has (the split clusters must all fit:
// gemm_split_capacity), and so do registers asked for 3 blocks (as for
// Rows16: FD_GEMM_R16_MINB). The slice must be a multiple of 128 k's (the
// models' shapes are; other weights read the bf16 tiles, same bits).
using Fp8Rows16 = Shape<16, 128, 1, 8, 3, 2 * kTileK, 3, false, false, 1>;
// Rows128 and Rows192 on a tiled weight: two or three wgmma warpgroups, and
// a producer. Rows192 takes 3 stages: its folded totals (96 KB) and 4 stages
// would not fit a multiprocessor's shared memory.
using WgmmaRows128 = Shape<128, 128, 8, 1, FD_GEMM_WG_STAGES, 64, 1, true, FD_GEMM_WG_PRODUCER>;
// Rows64 on a tiled weight: one wgmma warpgroup and the producer, 256
// threads, so that two blocks share a multiprocessor outside Folded mode
// (twice the weight stages in flight of one 128-row block).
using WgmmaRows64 = Shape<64, 128, 4, 1, FD_GEMM_WG64_STAGES, 64, FD_GEMM_WG64_MINB, true, FD_GEMM_WG_PRODUCER>;
using WgmmaRows192 = Shape<192, 128, 12, 1, FD_GEMM_WG192_STAGES, 64, 1, true, FD_GEMM_WG_PRODUCER>;

// What the split fold ends in: y as computed, rope_store_kv's work (a qkv
// projection, a.rope) or silu_glu's (a GluTiles [gate; up] projection).
enum class Epilogue : uint8_t { Store, Rope, Glu };

// How a block covers K: all of it as one slice, all slices folded in turn,
// or one slice (blockIdx.y) as a member of a cluster that folds together.
enum class Mode : uint8_t { Whole, Folded, Split };
using gemm::kMaxSlices;

// A block's dynamic shared memory: the stages, then Folded mode's running
// totals (Split mode's partial tile reuses the stages once the pipeline is
// done), then the producer's barriers. Only Folded pays for the totals, so a
// Whole or Split block of a small tile leaves room for a second one.
template <class S, Mode MODE>
__host__ __device__ constexpr int barrier_offset() {
  return MODE == Mode::Folded ? S::kSmemBytes + S::kTotalBytes
         : MODE == Mode::Split ? S::kSplitSmemBytes
                               : S::kSmemBytes;
}
template <class S, Mode MODE>
__host__ __device__ constexpr int smem_bytes() {
  return barrier_offset<S, MODE>() + S::kBarrierBytes;
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  // .cg: weights stream through L2 only; src_bytes 0 zero-fills (padding).
  asm volatile("cp.async.cg.shared.global" FD_GEMM_L2_PREFETCH " [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Rows [0, ROWS) x k's [k0, k0 + BK) of `src` (row stride ld) into one
// operand's BK / 32 planes at `dst`; rows past `rows` and k's past K are zeros.
template <int ROWS, int THREADS, int BK>
__device__ __forceinline__ void load_rows(uint32_t dst, const bf16* src, int64_t ld, int rows, int k0, int K, int tid) {
  constexpr int kPerRow = BK / 8, kChunks = ROWS * kPerRow;
#pragma unroll
  for (int j = 0; j < (kChunks + THREADS - 1) / THREADS; ++j) {
    const int i = tid + j * THREADS;
    if (kChunks % THREADS != 0 && i >= kChunks) break;
    const int r = i / kPerRow, c = i % kPerRow, k = k0 + c * 8;
    const bool ok = r < rows && k < K;
    const uint32_t at = dst + static_cast<uint32_t>((((c >> 2) * ROWS + r) * 4 + (c & 3)) * 16);
    cp_async16(at, ok ? src + r * ld + k : src, ok ? 16 : 0);
  }
}



// One stage's w tile from a tiled weight (matmul_tiles.h): `src` holds the
// stage's bytes in shared-memory order already, so thread i copies piece i.
template <int ELEMS, int THREADS>
__device__ __forceinline__ void load_tile(uint32_t dst, const bf16* src, int tid) {
  constexpr int kChunks = ELEMS / 8;
#pragma unroll
  for (int j = 0; j < (kChunks + THREADS - 1) / THREADS; ++j) {
    const int i = tid + j * THREADS;
    if (kChunks % THREADS != 0 && i >= kChunks) break;
    cp_async16(dst + static_cast<uint32_t>(i * 16), src + i * 8, 16);
  }
}

// A stage of fp8 codes: two consecutive 64-k tiles of a strip (8 KB each),
// the second zero-filled where the strip has no more tiles (`second`).
template <int THREADS>
__device__ __forceinline__ void load_fp8_stage(uint32_t dst, const unsigned char* src, bool second, int tid) {
  constexpr int kTile = kStripRows * kStripTileK, kChunks = 2 * kTile / 16;
  static_assert(kChunks % THREADS == 0, "whole chunks a thread");
#pragma unroll
  for (int j = 0; j < kChunks / THREADS; ++j) {
    const int i = tid + j * THREADS;
    const bool ok = i * 16 < kTile || second;
    cp_async16(dst + static_cast<uint32_t>(i * 16), ok ? src + i * 16 : src, ok ? 16 : 0);
  }
}

// Two fp8 codes of `codes` (the bytes `sel` picks into the high byte of each
// half) as the bf16 pair they stand for. The code's bits shifted into a
// bf16 (sign to sign, its 4 exponent bits to the exponent field's low bits,
// its 3 mantissa bits to the top of the mantissa) are its value times
// 2^-120, a normal bf16 or zero (the grid has no subnormals: ops/fp8_grid.h);
// times scale2 = 2^(120 + e) for both halves, that is the row's value,
// exactly (a power of two, the result normal).
__device__ __forceinline__ uint32_t fp8_pair(uint32_t codes, uint32_t sel, uint32_t scale2) {
  const uint32_t v = __byte_perm(codes, 0u, sel);
  const uint32_t t = ((v >> 4) & 0x07f007f0u) | (v & 0x80008000u);
  __nv_bfloat162 r = __hmul2(reinterpret_cast<const __nv_bfloat162&>(t), reinterpret_cast<const __nv_bfloat162&>(scale2));
  return reinterpret_cast<const uint32_t&>(r);
}

// Block index -> output tile, m fastest within groups of 16 row tiles, so
// that blocks running together share weight tiles (and x stays in L2).
__device__ __forceinline__ void tile_of(int id, int m_tiles, int n_tiles, int& mt, int& nt) {
  constexpr int G = 16;
  const int per_group = G * n_tiles, group = id / per_group, first = group * G;
  const int size = min(m_tiles - first, G), in = id - group * per_group;
  mt = first + in % size;
  nt = in / size;
}

// TILED: w is a tiled weight (a.w_tiles), read by ldmatrix from its core
// matrices; else row-major, in planes. FP8: its fp8 codes (a.w8) instead.
template <class S, class Y, Mode MODE, bool TILED, Epilogue EPI = Epilogue::Store, bool FP8 = false>
__global__ void __launch_bounds__(S::kBlockThreads, S::MIN_BLOCKS) gemm_kernel(const GemmArgs a) {
  static_assert(EPI == Epilogue::Store || (std::is_same_v<Y, bf16> && MODE == Mode::Split && TILED),
                "fused epilogues: bf16 y, split, tiled w");
  static_assert(!FP8 || (TILED && !S::WGMMA && !S::PRODUCER && S::W_BYTES == 1 && S::BK == 2 * kTileK),
                "fp8 codes: the mma.sync chain, two 64-k tiles a stage");
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  const int wm = warp / S::WN, wn = warp % S::WN;
  const int M = a.m, N = a.n, K = a.k;
  const int m_tiles = (M + S::BM - 1) / S::BM, n_tiles = (N + S::BN - 1) / S::BN, tiles = m_tiles * n_tiles;
  // The output tile in hand: blockIdx.x's, or each of a persistent block's
  // tiles in turn (set_tile; the lambdas below read these by reference).
  int mt, nt, m0, n0, x_rows, w_rows;
  const bf16* x;
  const bf16* w;
  const unsigned char* w8;

  const int k_tiles = (K + S::BK - 1) / S::BK, per_slice = a.slice / S::BK;
  int kt0 = 0, kt1 = k_tiles;
  if constexpr (MODE == Mode::Split) {
    kt0 = blockIdx.y * per_slice;
    kt1 = min(kt0 + per_slice, k_tiles);
  }

  // A tiled weight's strip starts n0 * ldw elements in (ldw: its k's per
  // row, padded), and its stage kt BN * BK elements after the one before.
  // The fp8 codes' strips are ldw bytes a row apart, a stage BN * BK bytes.
  const auto set_tile = [&](int id) {
    tile_of(id, m_tiles, n_tiles, mt, nt);
    m0 = mt * S::BM;
    n0 = nt * S::BN;
    x = static_cast<const bf16*>(a.x) + m0 * a.ldx;
    w = static_cast<const bf16*>(a.w) + n0 * a.ldw;
    w8 = static_cast<const unsigned char*>(a.w8) + static_cast<int64_t>(n0) * a.ldw;
    x_rows = min(S::BM, M - m0);
    w_rows = min(S::BN, N - n0);
  };
  set_tile(blockIdx.x);
  const uint32_t base = smem_u32(smem);
  const auto load_x = [&](int stage, int kt) {
    load_rows<S::BM, S::kThreads, S::BK>(base + stage * S::kStageBytes, x, a.ldx, x_rows, kt * S::BK, K, tid);
  };
  const auto load_w = [&](int stage, int kt) {
    const uint32_t dst = base + stage * S::kStageBytes + S::kXBytes;
    if constexpr (FP8)
      load_fp8_stage<S::kThreads>(dst, w8 + static_cast<int64_t>(kt) * S::BN * S::BK, 2 * kt + 1 < a.ldw / kTileK, tid);
    else if constexpr (TILED)
      load_tile<S::BN * S::BK, S::kThreads>(dst, w + static_cast<int64_t>(kt) * S::BN * S::BK, tid);
    else
      load_rows<S::BN, S::kThreads, S::BK>(dst, w, a.ldw, w_rows, kt * S::BK, K, tid);
  };

  float acc[S::MT][S::NT][4];
  const auto zero_acc = [&] {
#pragma unroll
    for (int i2 = 0; i2 < S::MT; ++i2)
#pragma unroll
      for (int j = 0; j < S::NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i2][j][e] = 0.f;
  };
  zero_acc();
  // FP8: the bf16 pair 2^(120 + e) for the row of each of this lane's n tiles (fp8_pair).
  uint32_t scale2[FP8 ? S::NT : 1];
  if constexpr (FP8) {
#pragma unroll
    for (int j = 0; j < S::NT; ++j) {
      const uint32_t field = static_cast<uint32_t>(247 + a.w8_exp[n0 + wn * S::kWarpCols + j * 8 + g]);
      scale2[j] = (field << 7) | (field << 23);
    }
  }
  float* total = reinterpret_cast<float*>(smem + S::kSmemBytes) + tid;  // Folded mode only
  constexpr int kRegNT = MODE == Mode::Folded ? S::kRegNT : 0, kSmemNT = S::NT - S::kRegNT;
  float treg[S::MT][kRegNT > 0 ? kRegNT : 1][4];
  const auto total_at = [&](int i, int j, int e) -> float& {
    if (j < kRegNT) return treg[i][j][e];
    return total[((i * kSmemNT + j - kRegNT) * 4 + e) * S::kThreads];
  };

  // One stage's tile into the accumulators: wgmma (a warpgroup's 64 rows by
  // the whole w tile) or the mma.sync chain.
  const auto multiply = [&](int stage, int kt) {
    const unsigned char* sx = smem + stage * S::kStageBytes;
    const unsigned char* sw = sx + S::kXBytes;
    const uint32_t sw_addr = base + stage * S::kStageBytes + S::kXBytes;
#if FD_HAVE_WGMMA
    constexpr bool kWgmma = S::WGMMA && TILED;
#else
    constexpr bool kWgmma = false;  // this device pass has no wgmma: the chain by mma.sync, same bits
#endif
    if constexpr (kWgmma) {
#if FD_HAVE_WGMMA
      float(&d)[S::NT * 4] = reinterpret_cast<float(&)[S::NT * 4]>(acc[0]);
      // Every x fragment of the stage first, so that one fence covers the
      // registers all its wgmmas read.
      constexpr int kBlocks = S::BK / kBlockK;
      static_assert(kBlocks <= 2, "a stage is one or two chain blocks");
      uint4 a_lo[kBlocks], a_hi[kBlocks];
      const int r = wm * S::kWarpRows + g;
#pragma unroll
      for (int b = 0; b < kBlocks; ++b) {
        a_lo[b] = *reinterpret_cast<const uint4*>(sx + ((b * S::BM + r) * 4 + q) * 16);
        a_hi[b] = *reinterpret_cast<const uint4*>(sx + ((b * S::BM + r + 8) * 4 + q) * 16);
      }
      // The stage's blocks that start before K (the rest are not in the
      // chain) as one straight run of wgmmas: a branch between two of them
      // made ptxas serialize every wgmma of the kernel (warning C7520; 10-15%
      // of the prefill GEMMs' time on the H200, bench/gemm_notes.md).
      const auto run = [&](auto blocks) {
        wgmma::fence();
#pragma unroll
        for (int b = 0; b < decltype(blocks)::value; ++b) {
          const uint32_t half0 = sw_addr + b * (S::BN * 64), half1 = half0 + S::BN * 32;
          gemm::wgmma_n128(d, a_lo[b].x, a_hi[b].x, a_lo[b].y, a_hi[b].y, gemm::wgmma_desc(half0));
          gemm::wgmma_n128(d, a_lo[b].z, a_hi[b].z, a_lo[b].w, a_hi[b].w, gemm::wgmma_desc(half1));
        }
        wgmma::commit();
        wgmma::wait();
      };
      if (kt * S::BK + (kBlocks - 1) * kBlockK < K)
        run(std::integral_constant<int, kBlocks>{});
      else
        run(std::integral_constant<int, 1>{});
#endif
    } else {
#pragma unroll
      for (int b = 0; b < S::BK / kBlockK; ++b) {
        if (kt * S::BK + b * kBlockK >= K) break;  // blocks past K are not in the chain
        uint4 a_lo[S::MT], a_hi[S::MT], bw[S::NT];
#pragma unroll
        for (int i2 = 0; i2 < S::MT; ++i2) {
          const int r = wm * S::kWarpRows + i2 * 16 + g;
          a_lo[i2] = *reinterpret_cast<const uint4*>(sx + ((b * S::BM + r) * 4 + q) * 16);
          a_hi[i2] = *reinterpret_cast<const uint4*>(sx + ((b * S::BM + r + 8) * 4 + q) * 16);
        }
#pragma unroll
        for (int j = 0; j < S::NT; ++j) {
          if constexpr (FP8) {
            // Tile b / 2 of the stage, row group c / 8, its block b % 2, this
            // lane: its 8 codes (matmul_tiles.h).
            const int c = wn * S::kWarpCols + j * 8;
            const uint2 raw = *reinterpret_cast<const uint2*>(sw + (b >> 1) * (kStripRows * kStripTileK) +
                                                              (((c / 8) * 2 + (b & 1)) * 32 + lane) * 8);
            bw[j] = make_uint4(fp8_pair(raw.x, 0x1404u, scale2[j]), fp8_pair(raw.x, 0x3424u, scale2[j]),
                               fp8_pair(raw.y, 0x1404u, scale2[j]), fp8_pair(raw.y, 0x3424u, scale2[j]));
          } else if constexpr (TILED) {
            // Block b of the stage, row group c / 8: matrices (half 0, core 0),
            // (0, 1), (1, 0), (1, 1) give b0, b1 of the first mma, then of the second.
            const int c = wn * S::kWarpCols + j * 8;
            ldsm_x4(sw_addr + b * (S::BN * 64) + (lane >> 4) * (S::BN * 32) + c * 32 + ((lane >> 3) & 1) * 128 +
                        (lane & 7) * 16,
                    bw[j].x, bw[j].y, bw[j].z, bw[j].w);
          } else {
            const int c = wn * S::kWarpCols + j * 8 + g;
            bw[j] = *reinterpret_cast<const uint4*>(sw + ((b * S::BN + c) * 4 + q) * 16);
          }
        }
#pragma unroll
        for (int i2 = 0; i2 < S::MT; ++i2)
#pragma unroll
          for (int j = 0; j < S::NT; ++j) gemm::mma_block32(acc[i2][j], a_lo[i2], a_hi[i2], bw[j]);
      }
    }
  };
  // Folded mode: a slice ends every per_slice k tiles (slices start at k
  // tile 0) and at the tile's last; its partial is folded into the running
  // total and the chain restarts from +0. The last slice's fold stays in the
  // accumulators, which the epilogue stores.
  bool first_slice = true;
  int in_slice = 0;
  const auto fold_slice = [&](int kt) {
    if constexpr (MODE == Mode::Folded) {
      const bool last = kt + 1 == kt1;
      if (++in_slice == per_slice || last) {
#pragma unroll
        for (int i2 = 0; i2 < S::MT; ++i2)
#pragma unroll
          for (int j = 0; j < S::NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              float& t = total_at(i2, j, e);
              const float v = first_slice ? acc[i2][j][e] : gemm::fold(t, acc[i2][j][e]);
              if (last) {
                acc[i2][j][e] = v;
              } else {
                t = v;
                acc[i2][j][e] = 0.f;
              }
            }
        first_slice = last;  // the next tile starts afresh
        in_slice = 0;
      }
    }
  };

  // Element (i2, j, e) of this thread's fragments sits at row m, column n.
  const auto row_of = [&](int i2, int e) { return m0 + wm * S::kWarpRows + i2 * 16 + g + (e >> 1) * 8; };
  const auto col_of = [&](int j, int e) { return n0 + wn * S::kWarpCols + j * 8 + 2 * q + (e & 1); };
  const bool holds = warp < S::WM * S::WN;  // not a producer
  // Whole and Folded modes: the tile's y from the accumulators, finished by
  // rule 3. Elements e and e + 1 are adjacent columns of one row: one store
  // of both where y's alignment allows (same values either way).
  const auto store_tile = [&] {
    Y* y = static_cast<Y*>(a.y);
    using Pair = std::conditional_t<std::is_same_v<Y, float>, float2, __nv_bfloat162>;
    const bool pairs = a.ldy % 2 == 0 && reinterpret_cast<uintptr_t>(y) % sizeof(Pair) == 0;
#pragma unroll
    for (int i2 = 0; i2 < S::MT; ++i2)
#pragma unroll
      for (int j = 0; j < S::NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          const int m = row_of(i2, e), n = col_of(j, e);  // n even: n + 1 may still be past N
          if (m >= M || n >= N) continue;
          Y* at = y + static_cast<int64_t>(m) * a.ldy + n;
          const Y v0 = gemm::finish<Y>(acc[i2][j][e], a.bias, a.bias_f32, n);
          if (pairs && n + 1 < N) {
            Pair both;
            both.x = v0;
            both.y = gemm::finish<Y>(acc[i2][j][e + 1], a.bias, a.bias_f32, n + 1);
            *reinterpret_cast<Pair*>(at) = both;
          } else {
            at[0] = v0;
            if (n + 1 < N) at[1] = gemm::finish<Y>(acc[i2][j][e + 1], a.bias, a.bias_f32, n + 1);
          }
        }
  };

  if constexpr (S::PRODUCER && TILED) {
    // A producer warpgroup fills the stages (w by one bulk copy, x by
    // cp.async), each stage's "full" barrier completing when both landed;
    // the consumers multiply and release the stage on its "empty" barrier.
    // No block-wide barrier in the loop. Outside Split mode the block is
    // persistent: it takes tiles blockIdx.x, + gridDim.x, ... (the launch
    // sizes the grid to the blocks that fit at once), and the ring runs on
    // across them, so the producer fills the next tile's first stages while
    // the consumers finish this one's.
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + barrier_offset<S, MODE>());
    uint64_t* empty = full + S::STAGES;
    if (tid == 0) {
      for (int st = 0; st < S::STAGES; ++st) {
        mbar_init(&full[st], kProducerThreads + 1);  // every producer's cp.async, plus the bulk copy's expect_tx
        mbar_init(&empty[st], S::WM * S::WN);      // every consumer warp
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int n = kt1 - kt0;
    // Every tile of a persistent block (a Split block has one: a single
    // pass, so that its code is that of a block without the loop), `ring` the
    // stages filled or consumed before it.
    const auto each_tile = [&](auto&& work) {
      if constexpr (MODE == Mode::Split) {
        work(0u);
      } else {
        unsigned ring = 0;
        for (int id = blockIdx.x; id < tiles; id += gridDim.x, ring += n) {
          if (id != static_cast<int>(blockIdx.x)) set_tile(id);
          work(ring);
        }
      }
    };
    if (warp >= S::WM * S::WN) {
      const int ptid = tid - S::kThreads;
      constexpr uint32_t kWBytes = S::BN * S::BK * 2;
      const auto load_w_bulk = [&](int st, int i) {
        mbar_expect_tx(&full[st], kWBytes);
        bulk_copy(base + st * S::kStageBytes + S::kXBytes, w + static_cast<int64_t>(kt0 + i) * S::BN * S::BK, kWBytes,
                  &full[st]);
      };
      // The weight does not depend on the kernel before this one: the first
      // tile's first stages are requested before waiting for that kernel
      // (programmatic dependent launch), x's only after.
      const int early = min(n, S::STAGES);
      if (ptid == 0)
        for (int i = 0; i < early; ++i) load_w_bulk(i, i);
#if FD_GEMM_PDL
      asm volatile("griddepcontrol.wait;\n" ::: "memory");
      asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
      each_tile([&](auto ring) {
        for (int i = 0; i < n; ++i) {
          const unsigned it = ring + i, st = it % S::STAGES;
          if (it >= S::STAGES) mbar_wait(&empty[st], ((it / S::STAGES) - 1) & 1);
          if (it >= static_cast<unsigned>(early) && ptid == 0) load_w_bulk(st, i);
          load_rows<S::BM, kProducerThreads, S::BK>(base + st * S::kStageBytes, x, a.ldx, x_rows, (kt0 + i) * S::BK,
                                                     K, ptid);
          cp_async_mbar_arrive(&full[st]);
        }
      });
    } else {
      each_tile([&](auto ring) {
        if (ring != 0) zero_acc();
        for (int i = 0; i < n; ++i) {
          const unsigned it = ring + i, st = it % S::STAGES;
          mbar_wait(&full[st], (it / S::STAGES) & 1);
          multiply(st, kt0 + i);
          __syncwarp();
          if (lane == 0) mbar_arrive(&empty[st]);
          fold_slice(kt0 + i);
        }
        if constexpr (MODE != Mode::Split) store_tile();
      });
    }
    if constexpr (MODE != Mode::Split) return;
  } else {
    // Every thread loads and multiplies, a block barrier per tile. The weight
    // does not depend on the kernel before this one: its first tiles are
    // requested before waiting for that kernel (programmatic dependent
    // launch; a no-op without it), x's only after. Groups: one per weight
    // tile, then one with all prologue x tiles, then one per loop step.
    constexpr int kAhead = S::STAGES - 1;  // tiles loaded ahead of the one being multiplied
#pragma unroll
    for (int st = 0; st < kAhead; ++st) {
      if (kt0 + st < kt1) load_w(st, kt0 + st);
      cp_async_commit();
    }
#if FD_GEMM_PDL
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
#pragma unroll
    for (int st = 0; st < kAhead; ++st)
      if (kt0 + st < kt1) load_x(st, kt0 + st);
    cp_async_commit();
    for (int kt = kt0; kt < kt1; ++kt) {
      const int i = kt - kt0;
      if (i == 0)
        cp_async_wait<0>();  // the prologue's x group came last
      else
        cp_async_wait<kAhead - 1>();
#if FD_HAVE_WGMMA
      // cp.async wrote the stage through the generic proxy and wgmma reads it
      // through the async one: each thread fences its own copies before all meet.
      if constexpr (S::WGMMA && TILED) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
      __syncthreads();  // tile kt landed for everyone; stage (i + kAhead) % STAGES is free again
      if (kt + kAhead < kt1) {
        load_x((i + kAhead) % S::STAGES, kt + kAhead);
        load_w((i + kAhead) % S::STAGES, kt + kAhead);
      }
      cp_async_commit();
      multiply(i % S::STAGES, kt);
      fold_slice(kt);
    }
  }

  if constexpr (MODE != Mode::Split) {
    store_tile();
  } else {
    // The tile's slices are one cluster (rank = slice). Each block leaves its
    // partial in its own shared memory, then folds its share of the tile
    // from all of them (fold_columns, or rope_fold / glu_fold).
    cg::cluster_group cluster = cg::this_cluster();
    cp_async_wait<0>();
    __syncthreads();  // the pipeline's stages are free: the partial goes there
    float* mine = reinterpret_cast<float*>(smem);
    if (holds)
#pragma unroll
      for (int i2 = 0; i2 < S::MT; ++i2)
#pragma unroll
        for (int j = 0; j < S::NT; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            mine[(row_of(i2, e) - m0) * S::kPartialLd + col_of(j, e) - n0] = acc[i2][j][e];
    cluster.sync();
    const int slices = gridDim.y;
    const float* from[kMaxSlices];
#pragma unroll
    for (int u = 0; u < kMaxSlices; ++u) from[u] = cluster.map_shared_rank(mine, u < slices ? u : 0);
    if constexpr (EPI == Epilogue::Rope)
      gemm::rope_fold<S>(a, from, slices, x_rows, m0, n0, warp, lane);
    else if constexpr (EPI == Epilogue::Glu)
      gemm::glu_fold<S>(a, from, slices, x_rows, m0, n0, tid);
    else
      gemm::fold_columns<S, Y>(a, from, slices, x_rows, m0, n0, tid);
    // No block leaves while another may still read its partial. A relaxed
    // arrival is enough: a block's reads of the others' partials are done
    // once their values are folded, which comes before its arrival in
    // program order. cluster.sync() would add a release, a GPU-wide memory
    // barrier that waits for this block's y stores to land (ncu: the
    // epilogue's costliest wait, ~0.5 us a call; bench/gemm_notes.md).
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
  }
}

// The kernel's dynamic shared memory, opted in once per device (more than 48 KB needs it).
template <class S, class Y, Mode MODE, bool TILED, Epilogue EPI = Epilogue::Store, bool FP8 = false>
int configure() {
  constexpr int smem = smem_bytes<S, MODE>();
  static std::atomic<uint64_t> configured{0};
  int device = 0;
  check(cudaGetDevice(&device), "gemm: cudaGetDevice");
  const uint64_t bit = uint64_t{1} << (device & 63);
  if (!(configured.load() & bit)) {
    check(cudaFuncSetAttribute(gemm_kernel<S, Y, MODE, TILED, EPI, FP8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               smem),
          "gemm: cudaFuncSetAttribute");
    configured.fetch_or(bit);
  }
  return smem;
}

// How many blocks of a persistent kernel fit on the current device at once
// (multiprocessors times blocks a multiprocessor), found once per device.
template <class S, class Y, Mode MODE, bool TILED, Epilogue EPI, bool FP8>
int64_t resident_blocks(int smem) {
  static std::atomic<int64_t> known[64] = {};
  int device = 0;
  check(cudaGetDevice(&device), "gemm: cudaGetDevice");
  std::atomic<int64_t>& slot = known[device & 63];
  if (int64_t v = slot.load()) return v;
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemm_kernel<S, Y, MODE, TILED, EPI, FP8>,
                                                      S::kBlockThreads, static_cast<size_t>(smem)),
        "gemm: cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const int64_t v = std::max<int64_t>(1, int64_t{device_limits(device).sms} * per_sm);
  slot.store(v);
  return v;
}

template <class S, class Y, Mode MODE, bool TILED, Epilogue EPI = Epilogue::Store, bool FP8 = false>
void launch_mode(const GemmArgs& a, int slices, cudaStream_t stream) {
  auto* kernel = gemm_kernel<S, Y, MODE, TILED, EPI, FP8>;
  const int smem = configure<S, Y, MODE, TILED, EPI, FP8>();
  // A block a tile, except that the producer kernels outside Split mode are
  // persistent (gemm_kernel): no more blocks than fit at once.
  int64_t blocks = ((a.m + S::BM - 1) / S::BM) * static_cast<int64_t>((a.n + S::BN - 1) / S::BN);
  if (S::PRODUCER && TILED && MODE != Mode::Split && FD_GEMM_PERSISTENT)
    blocks = std::min(blocks, resident_blocks<S, Y, MODE, TILED, EPI, FP8>(smem));
  const dim3 grid(static_cast<unsigned>(blocks), MODE == Mode::Split ? static_cast<unsigned>(slices) : 1u);
  KernelLaunch launch(grid, dim3(S::kBlockThreads), static_cast<size_t>(smem), stream, FD_GEMM_PDL);
  if constexpr (MODE == Mode::Split) launch.clusters(1, static_cast<unsigned>(slices), 1);  // a tile's slices
  check(cudaLaunchKernelEx(&launch.config, kernel, a), "gemm kernel launch");
}

template <class S, class Y, bool TILED, bool FP8 = false>
void launch_layout(const GemmArgs& a, cudaStream_t stream) {
  const int slices = (a.k + a.slice - 1) / a.slice;
  if (a.split && slices > 1 && slices <= kMaxSlices)
    launch_mode<S, Y, Mode::Split, TILED, Epilogue::Store, FP8>(a, slices, stream);
  else if (slices > 1)
    launch_mode<S, Y, Mode::Folded, TILED, Epilogue::Store, FP8>(a, slices, stream);
  else
    launch_mode<S, Y, Mode::Whole, TILED, Epilogue::Store, FP8>(a, slices, stream);
}

// Whether a call reads a WeightQuant::Fp8 weight's codes (Fp8Rows16).
bool reads_fp8(const GemmArgs& a) { return a.w_tiles && a.w8 && a.slice % Fp8Rows16::BK == 0; }

template <class S, class Y>
void launch_shape(const GemmArgs& a, cudaStream_t stream) {
  if constexpr (std::is_same_v<S, ShapeOf<GemmTile::Rows16>>)
    if (reads_fp8(a)) return launch_layout<Fp8Rows16, Y, true, true>(a, stream);
  if (a.w_tiles)
    launch_layout<S, Y, true>(a, stream);
  else
    launch_layout<S, Y, false>(a, stream);
}

template <class S>
void launch_wgmma(const GemmArgs& a, cudaStream_t stream) {
  if (a.y_f32)
    launch_layout<S, float, true>(a, stream);
  else
    launch_layout<S, bf16, true>(a, stream);
}

// Rows192 always folds its slices in turn, one slice or many, split or not:
// at 512 threads a block (128 registers a thread) its Whole and Split kernels
// spill, and asking setmaxnreg for more made ptxas fail (bench/gemm_notes.md).
template <class Y>
void launch_rows192(const GemmArgs& a, cudaStream_t stream) {
  launch_mode<WgmmaRows192, Y, Mode::Folded, true>(a, 1, stream);
}

template <GemmTile T>
void launch_tile(const GemmArgs& a, cudaStream_t stream) {
  if constexpr (T == GemmTile::Rows64) {
    if (a.w_tiles && FD_GEMM_WGMMA && FD_GEMM_WG64) return launch_wgmma<WgmmaRows64>(a, stream);
  }
  if constexpr (T == GemmTile::Rows128) {
    if (a.w_tiles && FD_GEMM_WGMMA) return launch_wgmma<WgmmaRows128>(a, stream);
  }
  if constexpr (T == GemmTile::Rows192) {
    if (a.w_tiles && FD_GEMM_WGMMA) return a.y_f32 ? launch_rows192<float>(a, stream) : launch_rows192<bf16>(a, stream);
  }
  // Rows192 without wgmma: the 128-row mma.sync kernel (ShapeOf has no 192).
  constexpr GemmTile kShape = T == GemmTile::Rows192 ? GemmTile::Rows128 : T;
  if (a.y_f32)
    launch_shape<ShapeOf<kShape>, float>(a, stream);
  else
    launch_shape<ShapeOf<kShape>, bf16>(a, stream);
}

// A split call of shape S whose fold finishes rope_store_kv's or silu_glu's work.
template <class S, bool FP8 = false>
void launch_epilogue(const GemmArgs& a, int slices, cudaStream_t stream) {
  if (a.with_rope) return launch_mode<S, bf16, Mode::Split, true, Epilogue::Rope, FP8>(a, slices, stream);
  launch_mode<S, bf16, Mode::Split, true, Epilogue::Glu, FP8>(a, slices, stream);
}

}  // namespace

int gemm_split_capacity(int slices) {
  using S = ShapeOf<GemmTile::Rows16>;
  static std::atomic<int> cache[64][kMaxSlices + 1] = {};
  int device = 0;
  check(cudaGetDevice(&device), "gemm: cudaGetDevice");
  std::atomic<int>& known = cache[device & 63][std::clamp(slices, 1, kMaxSlices)];
  if (int v = known.load()) return v;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1, static_cast<unsigned>(slices));
  config.blockDim = dim3(S::kThreads);
  config.dynamicSmemBytes = static_cast<size_t>(configure<S, bf16, Mode::Split, true>());
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 1;
  attr.val.clusterDim.y = static_cast<unsigned>(slices);
  attr.val.clusterDim.z = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  int clusters = 0;
  check(cudaOccupancyMaxActiveClusters(&clusters, gemm_kernel<S, bf16, Mode::Split, true>, &config),
        "gemm: cudaOccupancyMaxActiveClusters");
  known.store(std::max(clusters, 1));
  return std::max(clusters, 1);
}

int gemm_slice(int64_t n, int64_t k, int sms) {
  const int64_t tiles = (n + 127) / 128;  // Rows16 blocks without a split
  const int64_t most = std::min<int64_t>(kMaxSlices, std::max<int64_t>(1, k / 256));
  // Double the slices while a 16-row call has under ~1.5 blocks per
  // multiprocessor, as long as all its clusters fit on the GPU at once (a
  // second wave of clusters would double the time).
  int64_t slices = 1;
  while (slices * 2 <= most && tiles * slices * 2 < 3 * static_cast<int64_t>(sms) &&
         tiles <= gemm_split_capacity(static_cast<int>(slices * 2)))
    slices *= 2;
  const int64_t per = (k + slices - 1) / slices;
  const int64_t slice = std::max<int64_t>(256, (per + kTileK - 1) / kTileK * kTileK);
  return static_cast<int>(std::min<int64_t>(slice, (k + kTileK - 1) / kTileK * kTileK));
}

void launch_gemm(GemmTile tile, const GemmArgs& a, cudaStream_t stream) {
  if (a.with_rope || a.with_glu) {
    const int slices = (a.k + a.slice - 1) / a.slice;
    if ((tile != GemmTile::Rows16 && tile != GemmTile::Rows64) || !a.split || !a.w_tiles || a.y_f32 || slices < 2 ||
        slices > kMaxSlices || (a.with_rope && a.with_glu))
      fail("matmul", "a fused epilogue needs a split 16- or 64-row call over a tiled weight with bf16 y");
    // Rows64 reads the bf16 tiles, by wgmma unless built without it.
    using Rows64 = std::conditional_t<FD_GEMM_WGMMA && FD_GEMM_WG64, WgmmaRows64, ShapeOf<GemmTile::Rows64>>;
    if (tile == GemmTile::Rows64) return launch_epilogue<Rows64>(a, slices, stream);
    if (reads_fp8(a)) return launch_epilogue<Fp8Rows16, true>(a, slices, stream);
    return launch_epilogue<ShapeOf<GemmTile::Rows16>>(a, slices, stream);
  }
  switch (tile) {
    case GemmTile::Rows16: return launch_tile<GemmTile::Rows16>(a, stream);
    case GemmTile::Rows32: return launch_tile<GemmTile::Rows32>(a, stream);
    case GemmTile::Rows64: return launch_tile<GemmTile::Rows64>(a, stream);
    case GemmTile::Rows128: return launch_tile<GemmTile::Rows128>(a, stream);
    case GemmTile::Rows192: return launch_tile<GemmTile::Rows192>(a, stream);
  }
}

}  // namespace flashdraft::ops::cuda
