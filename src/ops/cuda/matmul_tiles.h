#pragma once
// The weight layout the CUDA matmul streams (Layout::MatmulTiles). The
// weight is cut into strips of 128 rows (one output tile's columns), each
// strip into 64-k tiles in k order, each tile into two planes of 128 rows x
// 32 k (64 bytes a row): the bytes of one tile are exactly what a pipeline
// stage holds in shared memory (gemm_tiles.cu), so a stage is one contiguous
// 16 KB read. Row-major, the same stage is 128 pieces of 128 bytes, one from
// each of 128 rows, and DRAM serves such scattered pieces well below its
// streaming rate (H100, bench/gemm_proto.sh: the decode step's GEMMs went
// from 0.83 to 0.87-0.89 of their bandwidth floor, the step from 7.11 to
// 6.47 ms). Zeros pad the rows to a whole strip and k to a
// whole tile; the products are the same bits as from the row-major weight.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/backend.h"

namespace flashdraft::ops::cuda {

// Rows of a strip and k's of a tile (the kernels' output-tile width and k tile).
constexpr int64_t kStripRows = 128, kStripTileK = 64;

// Elements of the tiled copy of an n x k weight.
int64_t matmul_tiles_elems(int64_t n, int64_t k);
// k rounded up to whole tiles: a strip holds 128 times as many elements (the kernels' ldw).
inline int64_t matmul_tiles_k(int64_t k) { return (k + kStripTileK - 1) / kStripTileK * kStripTileK; }
// Writes w (a row-major bf16 CUDA view) tiled into dst (matmul_tiles_elems elements of bf16).
void pack_matmul_tiles(const Tensor& w, void* dst, cudaStream_t stream);

}  // namespace flashdraft::ops::cuda
