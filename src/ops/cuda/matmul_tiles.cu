#include "ops/cuda/matmul_tiles.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "ops/cuda/checks.h"
#include "ops/cuda/device.h"
#include "ops/cuda/gemm_invariant.cuh"
#include "ops/fp8_grid.h"

namespace flashdraft::ops::cuda {
namespace {

using bf16 = __nv_bfloat16;

// Element (or code byte) e of a tiled copy with `tiles` k tiles a strip:
// its strip's first row, its tile's first k, and its place in the tile.
struct TilePlace {
  int64_t row0, k0;
  int in_tile;
};
__device__ __forceinline__ TilePlace tile_place(int64_t e, int64_t tiles) {
  constexpr int64_t kTile = kStripRows * kStripTileK;
  const int64_t in_strip = e % (tiles * kTile);
  return {e / (tiles * kTile) * kStripRows, in_strip / kTile * kStripTileK, static_cast<int>(in_strip % kTile)};
}

// Where element e of a tiled copy sits in the weight: inside its tile, from
// the top, block b, half h, row group ng, core matrix c, row r, position j
// (matmul_tiles.h).
__device__ __forceinline__ void tiled_source(int64_t e, int64_t tiles, int64_t& row, int64_t& col) {
  const TilePlace p = tile_place(e, tiles);
  const int b = p.in_tile / (kStripRows * 32), h = p.in_tile / (kStripRows * 16) % 2;
  const int ng = p.in_tile / 128 % 16, c = p.in_tile / 64 % 2, r = p.in_tile / 8 % 8, j = p.in_tile % 8;
  row = p.row0 + ng * 8 + r;
  col = p.k0 + b * 32 + gemm::chain_k(h, 8 * c + j);
}

// One thread per tiled element.
__global__ void pack_kernel(const bf16* __restrict__ w, int64_t ld, int64_t n, int64_t k, int64_t tiles,
                            bf16* __restrict__ out, int64_t total) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t row, col;
    tiled_source(e, tiles, row, col);
    out[e] = row < n && col < k ? w[row * ld + col] : __float2bfloat16_rn(0.f);
  }
}

// The inverse of pack_kernel (padding dropped).
__global__ void unpack_kernel(const bf16* __restrict__ tiled, int64_t n, int64_t k, int64_t tiles,
                              bf16* __restrict__ w, int64_t ld, int64_t total) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t row, col;
    tiled_source(e, tiles, row, col);
    if (row < n && col < k) w[row * ld + col] = tiled[e];
  }
}

// One block per row: the row's largest magnitude, its exponent, the row rounded.
__global__ void round_rows_kernel(bf16* __restrict__ w, int64_t ld, int64_t k, int8_t* __restrict__ exps) {
  __shared__ uint32_t absmax;
  if (threadIdx.x == 0) absmax = 0;
  __syncthreads();
  bf16* row = w + blockIdx.x * ld;
  uint32_t mine = 0;
  for (int64_t c = threadIdx.x; c < k; c += blockDim.x) mine = max(mine, fp8::magnitude(__bfloat162float(row[c])));
  atomicMax(&absmax, mine);  // magnitudes compare as their bits
  __syncthreads();
  const int e = fp8::row_exponent(absmax);
  if (threadIdx.x == 0) exps[blockIdx.x] = static_cast<int8_t>(e);
  for (int64_t c = threadIdx.x; c < k; c += blockDim.x)
    row[c] = __float2bfloat16_rn(fp8::round(__bfloat162float(row[c]), e));  // exact: 3 mantissa bits
}

// One thread per code byte (matmul_tiles.h: strip, tile, 8-row group, block,
// lane (g, q), byte i: half i / 4, chain position 2q + i % 2 (+ 8 for i % 4 >= 2)).
__global__ void pack_fp8_kernel(const bf16* __restrict__ w, int64_t ld, int64_t n, int64_t k, int64_t tiles,
                                const int8_t* __restrict__ exps, uint8_t* __restrict__ out, int64_t total) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const TilePlace p = tile_place(e, tiles);
    const int ng = p.in_tile / 512, b = p.in_tile / 256 % 2, lane = p.in_tile / 8 % 32, i = p.in_tile % 8;
    const int g = lane / 4, q = lane % 4;
    const int logical = 2 * q + i % 2 + (i % 4 >= 2 ? 8 : 0);
    const int64_t row = p.row0 + ng * 8 + g;
    const int64_t col = p.k0 + b * 32 + gemm::chain_k(i / 4, logical);
    out[e] = row < n && col < k ? fp8::encode(__bfloat162float(w[row * ld + col]), exps[row]) : 0;
  }
}

__global__ void pad_exps_kernel(const int8_t* __restrict__ exps, int64_t n, int8_t* __restrict__ out, int64_t total) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < total;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[r] = r < n ? exps[r] : 0;
}

unsigned grid_for(int64_t total) { return static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, 65535)); }

// The codes: one byte for each element of the bf16 tiles; the exponents follow them.
int64_t fp8_codes_bytes(int64_t n, int64_t k) { return matmul_tiles_elems(n, k); }

}  // namespace

int64_t matmul_tiles_bytes(int64_t n, int64_t k) {
  return matmul_tiles_elems(n, k) * static_cast<int64_t>(sizeof(bf16));
}
int64_t fp8_twin_bytes(int64_t n, int64_t k) {
  return fp8_codes_bytes(n, k) + (n + kStripRows - 1) / kStripRows * kStripRows;
}
Fp8Twin fp8_twin(const Tensor& w) {
  const auto* codes = static_cast<const char*>(w.data) + matmul_tiles_bytes(w.rows, w.cols);
  return {codes, reinterpret_cast<const int8_t*>(codes + fp8_codes_bytes(w.rows, w.cols))};
}

void unpack_matmul_tiles(const void* tiled, const Tensor& dst, cudaStream_t stream) {
  expect_tensor(dst, DType::BF16, "unpack_matmul_tiles", "dst");
  const int64_t total = matmul_tiles_elems(dst.rows, dst.cols);
  if (total == 0) return;
  unpack_kernel<<<grid_for(total), 256, 0, stream>>>(static_cast<const bf16*>(tiled), dst.rows, dst.cols,
                                                     matmul_tiles_k(dst.cols) / kStripTileK, dst.as<bf16>(),
                                                     row_pitch(dst), total);
  check(cudaGetLastError(), "unpack_matmul_tiles launch");
}

void round_rows_fp8(const Tensor& w, int8_t* exps, cudaStream_t stream) {
  expect_tensor(w, DType::BF16, "round_rows_fp8", "w");
  if (w.empty()) return;
  if (w.rows > INT32_MAX) fail("round_rows_fp8", "w is " + describe(w) + ": too many rows");
  round_rows_kernel<<<static_cast<unsigned>(w.rows), 256, 0, stream>>>(w.as<bf16>(), row_pitch(w), w.cols, exps);
  check(cudaGetLastError(), "round_rows_fp8 launch");
}

void pack_fp8_twin(const Tensor& w, const int8_t* exps, void* dst, cudaStream_t stream) {
  expect_tensor(w, DType::BF16, "pack_fp8_twin", "w");
  const int64_t total = fp8_codes_bytes(w.rows, w.cols);
  if (total == 0) return;
  auto* out = static_cast<uint8_t*>(dst);
  pack_fp8_kernel<<<grid_for(total), 256, 0, stream>>>(w.as<const bf16>(), row_pitch(w), w.rows, w.cols,
                                                       matmul_tiles_k(w.cols) / kStripTileK, exps, out, total);
  check(cudaGetLastError(), "pack_fp8_twin launch");
  const int64_t padded = fp8_twin_bytes(w.rows, w.cols) - total;
  pad_exps_kernel<<<grid_for(padded), 256, 0, stream>>>(exps, w.rows, reinterpret_cast<int8_t*>(out + total),
                                                        padded);
  check(cudaGetLastError(), "pack_fp8_twin launch");
}

int64_t matmul_tiles_elems(int64_t n, int64_t k) {
  return (n + kStripRows - 1) / kStripRows * kStripRows * matmul_tiles_k(k);
}

void pack_matmul_tiles(const Tensor& w, void* dst, cudaStream_t stream) {
  expect_tensor(w, DType::BF16, "pack_matmul_tiles", "w");  // row-major: a tiled w is refused there
  const int64_t total = matmul_tiles_elems(w.rows, w.cols);
  if (total == 0) return;
  const int64_t blocks = std::min<int64_t>((total + 255) / 256, 65535);
  pack_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(w.as<const bf16>(), row_pitch(w), w.rows, w.cols,
                                                                 matmul_tiles_k(w.cols) / kStripTileK,
                                                                 static_cast<bf16*>(dst), total);
  check(cudaGetLastError(), "pack_matmul_tiles launch");
}

}  // namespace flashdraft::ops::cuda
