#include "ops/cuda/matmul.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "ops/cuda/checks.h"
#include "ops/cuda/device.h"
#include "ops/cuda/matmul_tiles.h"

namespace flashdraft::ops::cuda {
namespace {

// The kernels load x and w in 16-byte pieces: every row must start on a
// 16-byte boundary and hold whole pieces.
void expect_rows_16b(const Tensor& t, const char* name) {
  const bool ok = reinterpret_cast<uintptr_t>(t.data) % 16 == 0 && t.cols % 8 == 0 && (t.rows <= 1 || t.ld % 8 == 0);
  if (!ok)
    fail("matmul", std::string(name) + " is " + describe(t) +
                       ": the bf16 GEMM needs rows of a multiple of 8 elements starting on 16-byte boundaries "
                       "(in % 8 == 0, ld % 8 == 0, 16-byte aligned data)");
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The split calls whose cluster fold can finish rope_store_kv's or silu_glu's
// work (launch_gemm): 16- and 64-row blocks.
bool folds_epilogue(const Matmul::Choice& c) {
  return c.split && (c.tile == GemmTile::Rows16 || c.tile == GemmTile::Rows64);
}

// What a call of `a` runs: the 64-row wgmma tile reads bf16 tiles, not a
// row-major weight or fp8 codes (Matmul::choose).
Matmul::Choice choice_for(const Matmul& mm, const GemmArgs& a) {
  return mm.choose(a.m, a.n, a.k, a.w_tiles && !a.w8);
}

}  // namespace

Matmul::Matmul() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  sms_ = device_limits(device).sms;
}

Matmul::Choice Matmul::choose(int64_t m, int64_t n, int64_t k, bool bf16_tiles) const {
  Choice c;
  // 33-64 rows (a verify of 3-4 sequences) fit one 64-row tile, whose wgmma
  // kernel (over the models' tiled weights) runs two blocks a multiprocessor:
  // at 64 rows 4-26% faster than the better of Rows64's mma.sync kernel and
  // the 128-row tile on every Qwen3-8B shape. At 17-32 rows it beat Rows32 on
  // qkv only, past 64 rows the 128-row tiles on o only (and down by 1-4%)
  // (bench/gemm_proto.sh's `small`, H200, bench/gemm_notes.md).
  c.tile = m <= 16   ? GemmTile::Rows16
           : m <= 32 ? GemmTile::Rows32
           : m <= 64 ? GemmTile::Rows64
                     : GemmTile::Rows128;
  const int64_t sms = sms_, slices = ceil_div(k, slice(n, k)), n_tiles = ceil_div(n, gemm_tile_cols(c.tile));
  const int64_t tiles = ceil_div(m, gemm_tile_rows(c.tile)) * n_tiles;
  // Up to 32 rows, a weight whose split blocks give the multiprocessors 1 to
  // 1.5 each (its slices capped by how many clusters fit: Qwen3-8B's qkv, 48
  // tiles x 4 slices) streams faster through the 64-row wgmma tile's four
  // bulk-copied stages than through Rows16's or Rows32's cp.async pipeline:
  // qkv 15.4 against 16.3 us at 1 row, 16.4 against 18.1 at 16, 17.2 against
  // 22.5 at 32; every other shape was as fast or faster on the small tiles
  // (bench/gemm_proto.sh's `small`, H200).
  if (m <= 32 && bf16_tiles && slices > 1 && n_tiles * slices >= sms && 2 * n_tiles * slices < 3 * sms) {
    c.tile = GemmTile::Rows64;
    c.split = true;
    return c;
  }
  if (c.tile != GemmTile::Rows128) {
    // Too few tiles to give every multiprocessor ~1.5 blocks: one block per slice.
    c.split = 2 * tiles < 3 * sms && slices > 1;
    return c;
  }
  // The wgmma tiles run one block a multiprocessor. Whole or folded, a
  // block is persistent and walks its share of the tiles back to back
  // (gemm_tiles.cu), so 128 rows cost the most tiles any block walks times
  // the k tiles, with no ramp worth counting; 192 rows likewise at 1.6 of a
  // 128-row k tile. A split block does one slice of one tile, and the
  // cluster's fold adds a ramp. Units are 128-row k tiles; the constants
  // were fitted on the H200 (bench/gemm_proto.sh's `tiles`: 96-2048 rows,
  // every Qwen3-8B shape; a two-slice split runs its k tiles faster than
  // deeper splits): there the pick took at most 1.03 of the fastest of the
  // three and 1.001 summed over all points (bench/gemm_notes.md).
  constexpr double kTile192 = 1.6, kTileSplit = 1.5, kTileSplit2 = 1.1, kRampSplit = 5;
  const auto waves = [&](int64_t blocks) { return static_cast<double>(ceil_div(blocks, sms)); };
  const double k_tiles = static_cast<double>(ceil_div(k, kStripTileK));
  const double slice_tiles = static_cast<double>(ceil_div(slice(n, k), kStripTileK));
  const double whole = waves(tiles) * k_tiles;
  const double split_tile = slices == 2 ? kTileSplit2 : kTileSplit;
  const double split = slices > 1 ? waves(tiles * slices) * (slice_tiles * split_tile + kRampSplit) : whole;
  const int64_t tiles192 = ceil_div(m, gemm_tile_rows(GemmTile::Rows192)) * n_tiles;
  const double rows192 = waves(tiles192) * k_tiles * kTile192;
  if (rows192 < std::min(whole, split))
    c.tile = GemmTile::Rows192;
  else
    c.split = split < whole;
  return c;
}

GemmArgs Matmul::checked_args(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                              int64_t y_cols) const {
  expect_tensor(x, DType::BF16, "matmul", "x");
  expect_weight(w, DType::BF16, "matmul", "w");
  expect_tensor(y, DType::BF16, DType::F32, "matmul", "y");
  expect_shape(y, x.rows, y_cols, "matmul", "y");
  if (w.cols != x.cols) fail("matmul", "x is " + describe(x) + " but w is " + describe(w) + " (in must match)");
  if (bias) {
    expect_tensor(*bias, DType::BF16, DType::F32, "matmul", "bias");
    expect_shape(*bias, 1, w.rows, "matmul", "bias");
  }
  GemmArgs a;
  if (y.empty()) return a;
  if (x.cols == 0) fail("matmul", "in = 0 (nothing to multiply)");
  if (overlaps(x, y) || overlaps(w, y)) fail("matmul", "y must not alias x or w");
  if (x.rows > INT_MAX || w.rows > INT_MAX || x.cols > INT_MAX)
    fail("matmul", "x " + describe(x) + " or w " + describe(w) + " is too large (dimensions up to 2^31 - 1)");
  expect_rows_16b(x, "x");
  const bool tiled = w.layout != Layout::RowMajor;
  if (!tiled) expect_rows_16b(w, "w");

  a.x = x.data;
  a.w = w.data;
  a.bias = bias ? bias->data : nullptr;
  a.y = y.data;
  a.ldx = row_pitch(x);
  a.ldw = tiled ? matmul_tiles_k(w.cols) : row_pitch(w);
  a.w_tiles = tiled;
  if (tiled && w.quant == WeightQuant::Fp8) {
    const Fp8Twin twin = fp8_twin(w);
    a.w8 = twin.codes;
    a.w8_exp = twin.exps;
  }
  a.ldy = row_pitch(y);
  a.m = static_cast<int>(x.rows);
  a.n = static_cast<int>(w.rows);
  a.k = static_cast<int>(x.cols);
  a.slice = slice(a.n, a.k);
  a.y_f32 = y.dtype == DType::F32;
  a.bias_f32 = bias && bias->dtype == DType::F32;
  return a;
}

void Matmul::run(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, cudaStream_t stream,
                 const Choice* force) {
  GemmArgs a = checked_args(x, w, bias, y, w.rows);
  if (y.empty()) return;
  const Choice c = force ? *force : choice_for(*this, a);
  a.split = c.split;
  launch_gemm(c.tile, a, stream);
}

bool Matmul::run_rope(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y, const RopeEpilogue& rope,
                      cudaStream_t stream) {
  GemmArgs a = checked_args(x, w, bias, y, w.rows);
  if (y.empty()) return false;
  const Choice c = choice_for(*this, a);
  // The epilogue stores four bf16 of y a lane (8 bytes).
  const bool y_ok = reinterpret_cast<uintptr_t>(y.data) % 8 == 0 && (y.rows <= 1 || y.ld % 4 == 0);
  if (!folds_epilogue(c) || !a.w_tiles || a.y_f32 || !y_ok || a.n % kRopeHeadDim != 0) return false;
  a.split = true;
  a.with_rope = true;
  a.rope = rope;
  launch_gemm(c.tile, a, stream);
  return true;
}

bool Matmul::run_glu(const Tensor& x, const Tensor& w, const Tensor& out, cudaStream_t stream) {
  if (w.layout != Layout::GluTiles) return false;
  GemmArgs a = checked_args(x, w, nullptr, out, w.rows / 2);
  if (out.empty() || out.dtype != DType::BF16) return false;
  const Choice c = choice_for(*this, a);
  // The epilogue stores four bf16 of out a lane (8 bytes).
  const bool out_ok = reinterpret_cast<uintptr_t>(out.data) % 8 == 0 && (out.rows <= 1 || out.ld % 4 == 0);
  if (!folds_epilogue(c) || !out_ok || a.n % (2 * kGluRun) != 0) return false;
  a.split = true;
  a.with_glu = true;
  launch_gemm(c.tile, a, stream);
  return true;
}

}  // namespace flashdraft::ops::cuda
