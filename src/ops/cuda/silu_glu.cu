#include <algorithm>

#include "ops/cuda/device.h"
#include "ops/cuda/ops.h"

namespace flashdraft::ops::cuda {
namespace {

__global__ void silu_glu_kernel(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    out[i] = g / (1.f + expf(-g)) * up[i];
  }
}

}  // namespace

void silu_glu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 65535);
  silu_glu_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(gate, up, out, n);
  check(cudaGetLastError(), "silu_glu kernel launch");
}

}  // namespace flashdraft::ops::cuda
