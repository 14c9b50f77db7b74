#include "ops/cuda/device.h"
#include "ops/cuda/ops.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row: the row is read twice (sum of squares, then scale), and
// the second read hits L1/L2 for the row sizes LLMs use.
__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                               float* __restrict__ y, int64_t dim, float eps) {
  const float* xr = x + blockIdx.x * dim;
  float* yr = y + blockIdx.x * dim;
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sum += xr[i] * xr[i];

  __shared__ float warp_sums[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.f;
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (threadIdx.x == 0) warp_sums[0] = sum;
  }
  __syncthreads();
  const float inv_rms = rsqrtf(warp_sums[0] / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = xr[i] * inv_rms * w[i];
}

}  // namespace

void rmsnorm(const float* x, const float* weight, float* y, int64_t rows, int64_t dim, float eps,
             cudaStream_t stream) {
  if (rows == 0) return;
  rmsnorm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, weight, y, dim, eps);
  check(cudaGetLastError(), "rmsnorm kernel launch");
}

}  // namespace flashdraft::ops::cuda
