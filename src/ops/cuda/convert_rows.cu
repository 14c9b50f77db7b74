#include <algorithm>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kThreads = 256;

// Backend::copy between dtypes: the f32 residual stream copied out as bf16
// taps (the drafter's GEMM input), often into a column slice of a wider
// buffer. x-blocks cover a row, y-blocks stride over rows as in silu_glu.
template <int V>
__global__ void convert_rows_kernel(const float* src, int64_t ld_src, bf16* dst, int64_t ld_dst, int64_t rows,
                                    int64_t cols) {
  const int64_t c = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (c >= cols) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    float v[V];
    load_vec<V>(src + r * ld_src + c, v);
    store_vec<V>(dst + r * ld_dst + c, v);
  }
}

}  // namespace

void convert_rows(const Tensor& src, const Tensor& dst, cudaStream_t stream) {
  expect_tensor(src, DType::F32, "copy", "src (converting copies go from f32 to bf16)");
  expect_tensor(dst, DType::BF16, "copy", "dst (converting copies go from f32 to bf16)");
  expect_shape(dst, src.rows, src.cols, "copy", "dst");
  if (src.empty()) return;
  const int v = std::min(vector_elems(src.cols, 4, {&src}), vector_elems(src.cols, 2, {&dst}));
  const int64_t blocks_x = (src.cols / v + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(std::min<int64_t>(src.rows, 65535)));
  FD_DISPATCH_VEC(v, V,
                  convert_rows_kernel<V><<<grid, kThreads, 0, stream>>>(src.as<float>(), src.ld, dst.as<bf16>(), dst.ld,
                                                                        src.rows, src.cols));
  check(cudaGetLastError(), "copy (f32 -> bf16) kernel launch");
}

}  // namespace flashdraft::ops::cuda
