#pragma once
// The weight layout the CUDA matmul streams (Layout::MatmulTiles). The
// weight is cut into strips of 128 rows (one output tile's columns), each
// strip into 64-k tiles in k order, each tile into its two 32-k chain blocks
// (gemm_invariant.cuh), each block into its two mmas' 16 k's (halves); a
// half is 16 groups of 8 rows, each two 8 x 8 core matrices (128 bytes: 8
// rows of 8 k's, in the chain's order, gemm::chain_k). So a pipeline
// stage's w tile is one contiguous 16 KB read (8 KB for 32-k stages); 8
// rows of a block (both halves) are one ldmatrix.x4 for mma.sync, and a half
// is one wgmma's B operand (core matrices 128 bytes apart along k, 256 along
// n; both in gemm_tiles.cu). Row-major, the same stage is 128 pieces of 128
// bytes, one from each of 128 rows, and DRAM serves such scattered pieces
// well below its streaming rate (H100, bench/gemm_proto.sh: the decode
// step's GEMMs went from 0.83 to 0.87-0.89 of their bandwidth floor, the
// step from 7.11 to 6.47 ms). Zeros pad the rows to a whole strip and k to a
// whole tile; the products are the same bits as from the row-major weight.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/backend.h"

namespace flashdraft::ops::cuda {

// Rows of a strip and k's of a tile (the kernels' output-tile width and k tile).
constexpr int64_t kStripRows = 128, kStripTileK = 64;

// Elements of the tiled copy of an n x k weight.
int64_t matmul_tiles_elems(int64_t n, int64_t k);
// Its bytes (bf16): where a WeightQuant::Fp8 weight's codes start (below).
int64_t matmul_tiles_bytes(int64_t n, int64_t k);
// k rounded up to whole tiles: a strip holds 128 times as many elements (the kernels' ldw).
inline int64_t matmul_tiles_k(int64_t k) { return (k + kStripTileK - 1) / kStripTileK * kStripTileK; }
// Writes w (a row-major bf16 CUDA view) tiled into dst (matmul_tiles_elems elements of bf16).
void pack_matmul_tiles(const Tensor& w, void* dst, cudaStream_t stream);
// The inverse: a tiled copy of a dst.rows x dst.cols weight back into dst (row-major bf16).
void unpack_matmul_tiles(const void* tiled, const Tensor& dst, cudaStream_t stream);

// A WeightQuant::Fp8 weight's buffer holds, after its bf16 tiles, the same
// values as fp8 codes (ops/fp8_grid.h) for the 16-row weight streamer, then
// each padded row's scale exponent (int8, 0 for padding). The codes follow
// the strips and 64-k tiles above; inside a tile, 8-row groups, then its two
// chain blocks, then the 32 lanes of a warp, 8 bytes each: lane (g, q)'s
// mma B fragments of row g for the block (chain positions 2q, 2q + 1,
// 2q + 8, 2q + 9 of the block's first mma, then the same of its second), so
// a lane's fragments for one block are one 8-byte load, conflict-free.
int64_t fp8_twin_bytes(int64_t n, int64_t k);  // codes (n and k padded as the tiles are) and exponents
// A prepared WeightQuant::Fp8 weight's codes and row exponents in its buffer.
struct Fp8Twin {
  const void* codes;
  const int8_t* exps;
};
Fp8Twin fp8_twin(const Tensor& w);
// Rounds every row of w (row-major bf16) in place to the fp8 grid; exps[r]:
// row r's scale exponent (w.rows of them).
void round_rows_fp8(const Tensor& w, int8_t* exps, cudaStream_t stream);
// Writes the codes of w (rounded by round_rows_fp8, exponents exps) and the
// padded exponents into dst (fp8_twin_bytes bytes, matmul_tiles_bytes into
// the prepared weight's buffer).
void pack_fp8_twin(const Tensor& w, const int8_t* exps, void* dst, cudaStream_t stream);

}  // namespace flashdraft::ops::cuda
