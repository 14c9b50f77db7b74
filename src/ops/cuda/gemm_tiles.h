#pragma once
// The GEMM kernel family behind the CUDA backend's matmul: y = x · w^T (+ bias),
// x [m, k] bf16, w [n, k] bf16, y [m, n] bf16 or f32. Every tile shape and
// both split modes compute each element by the rule of gemm_invariant.cuh, so
// which one runs (a choice made per call from m) never changes a bit.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace flashdraft::ops::cuda {

// Output tile (rows x cols) per block: Rows16 streams the weight for decode
// and verify rows, the larger ones trade weight re-reads for tensor-core reuse.
// Rows64, Rows128 and Rows192 are one, two and three wgmma warpgroups over a
// tiled weight on sm_90a; Rows192 over a row-major weight runs Rows128's kernel.
enum class GemmTile : uint8_t { Rows16, Rows32, Rows64, Rows128, Rows192 };
constexpr int gemm_tile_rows(GemmTile t) {
  return t == GemmTile::Rows16   ? 16
         : t == GemmTile::Rows32 ? 32
         : t == GemmTile::Rows64 ? 64
         : t == GemmTile::Rows128 ? 128
                                  : 192;
}
constexpr int gemm_tile_cols(GemmTile) { return 128; }

// rope_store_kv done by the qkv GEMM's split fold (Matmul::run_rope): y's
// columns are the q heads, then k's, then v's, of kRopeHeadDim each, so one
// output tile is one head and the cluster that folds it owns it whole. Device
// pointers; per row of the call: positions and slots.
constexpr int kRopeHeadDim = 128;
struct RopeEpilogue {
  const int32_t* positions = nullptr;
  const int32_t* slots = nullptr;     // pool rows; outside [0, pool_rows): nothing stored
  const float* inv_freq = nullptr;    // [head_dim / 2] f32
  const void* q_norm = nullptr;       // bf16 [head_dim], or null (no norm: both null)
  const void* k_norm = nullptr;
  void* k_cache = nullptr;            // bf16 [pool_rows, kv_heads * head_dim]
  void* v_cache = nullptr;
  int64_t ldk = 0, ldv = 0, pool_rows = 0;
  int heads = 0, kv_heads = 0;
  float attention_factor = 1.0f, eps = 0.0f;
};

// A Layout::GluTiles weight: runs of kGluRun gate rows, each followed by the
// kGluRun matching up rows, so that one output tile holds both halves of
// kGluRun outputs of silu_glu.
constexpr int kGluRun = 64;

struct GemmArgs {
  const void* x = nullptr;     // bf16, rows 16-byte aligned (ldx % 8 == 0, k % 8 == 0)
  const void* w = nullptr;     // bf16, likewise; or tiled (w_tiles, matmul_tiles.h; ldw = matmul_tiles_k(k))
  const void* bias = nullptr;  // [n] f32 or bf16, optional
  void* y = nullptr;           // f32 or bf16, any ld
  int64_t ldx = 0, ldw = 0, ldy = 0;
  int m = 0, n = 0, k = 0;
  int slice = 0;  // k's per slice: gemm_slice(n, k, ...), a multiple of 64
  bool y_f32 = false, bias_f32 = false;
  bool w_tiles = false;  // w is Layout::MatmulTiles: each stage's w tile is one contiguous piece
  // A WeightQuant::Fp8 tiled weight's codes and row exponents (matmul_tiles.h),
  // or null: 16-row calls then stream these instead of the bf16 tiles.
  const void* w8 = nullptr;
  const int8_t* w8_exp = nullptr;
  // Split mode: each block computes one slice, the blocks of an output tile
  // form a cluster and fold their partials in slice order (at most 8 slices).
  // Without it each block walks all slices itself.
  bool split = false;
  // With a split Rows16 call over a tiled weight, bf16 y of whole heads:
  // the fold finishes each head as rope_store_kv would (rope).
  bool with_rope = false;
  RopeEpilogue rope;
  // Likewise over a GluTiles weight: y is silu_glu's out [m, n / 2].
  bool with_glu = false;
};

// The slice length for a weight of n rows and k columns on a device with
// `sms` multiprocessors: enough slices (up to 8) that a 16-row call in split
// mode keeps every multiprocessor busy, none shorter than 256. Depends on the
// weight's shape only: that is what keeps rows of any batch bit-identical.
int gemm_slice(int64_t n, int64_t k, int sms);
// How many split-mode clusters of `slices` Rows16 blocks fit on the current device at once.
int gemm_split_capacity(int slices);

// Enqueues one GEMM on `stream` (arguments already checked by the caller).
void launch_gemm(GemmTile tile, const GemmArgs& args, cudaStream_t stream);

}  // namespace flashdraft::ops::cuda
