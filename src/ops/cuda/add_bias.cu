#include <algorithm>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kThreads = 256;

// matmul's bias for the dtype pairs cuBLASLt's epilogue does not take (its
// bias must have the output's type). Scalar: biased GEMMs are the small q/k/v
// projections of a few models, one extra pass over their output.
template <class Y, class B>
__global__ void add_bias_kernel(Y* y, int64_t ld, int64_t rows, int64_t cols, const B* __restrict__ bias) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const float b = to_float(bias[c]);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) y[r * ld + c] = from_float<Y>(to_float(y[r * ld + c]) + b);
}

template <class Y, class B>
void launch(const Tensor& y, const Tensor& bias, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((y.cols + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min<int64_t>(y.rows, 65535)));
  add_bias_kernel<Y, B><<<grid, kThreads, 0, stream>>>(y.as<Y>(), y.ld, y.rows, y.cols, bias.as<B>());
}

}  // namespace

void add_bias(const Tensor& y, const Tensor& bias, cudaStream_t stream) {
  expect_tensor(y, DType::F32, DType::BF16, "matmul bias", "y");
  expect_tensor(bias, DType::F32, DType::BF16, "matmul bias", "bias");
  expect_shape(bias, 1, y.cols, "matmul bias", "bias");
  if (y.empty()) return;
  const bool y32 = y.dtype == DType::F32, b32 = bias.dtype == DType::F32;
  if (y32 && b32)
    launch<float, float>(y, bias, stream);
  else if (y32)
    launch<float, bf16>(y, bias, stream);
  else if (b32)
    launch<bf16, float>(y, bias, stream);
  else
    launch<bf16, bf16>(y, bias, stream);
  check(cudaGetLastError(), "matmul bias kernel launch");
}

}  // namespace flashdraft::ops::cuda
