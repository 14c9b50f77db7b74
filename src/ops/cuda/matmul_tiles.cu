#include "ops/cuda/matmul_tiles.h"

#include <cuda_bf16.h>

#include <algorithm>

#include "ops/cuda/checks.h"
#include "ops/cuda/device.h"
#include "ops/cuda/gemm_invariant.cuh"

namespace flashdraft::ops::cuda {
namespace {

using bf16 = __nv_bfloat16;

// One thread per tiled element: element e of the copy is, from the top,
// strip s, tile t, block b, half h, row group ng, core matrix c, row r,
// position j (matmul_tiles.h).
__global__ void pack_kernel(const bf16* __restrict__ w, int64_t ld, int64_t n, int64_t k, int64_t tiles,
                            bf16* __restrict__ out, int64_t total) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t per_strip = tiles * kStripRows * kStripTileK;
    const int64_t s = e / per_strip, in_strip = e % per_strip;
    const int64_t t = in_strip / (kStripRows * kStripTileK);
    const int in_tile = static_cast<int>(in_strip % (kStripRows * kStripTileK));
    const int b = in_tile / (kStripRows * 32), h = in_tile / (kStripRows * 16) % 2;
    const int ng = in_tile / 128 % 16, c = in_tile / 64 % 2, r = in_tile / 8 % 8, j = in_tile % 8;
    const int64_t row = s * kStripRows + ng * 8 + r;
    const int64_t col = t * kStripTileK + b * 32 + gemm::chain_k(h, 8 * c + j);
    out[e] = row < n && col < k ? w[row * ld + col] : __float2bfloat16_rn(0.f);
  }
}

}  // namespace

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
