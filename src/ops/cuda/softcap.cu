#include <algorithm>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kThreads = 256;

// Elementwise over f32 logits, in place; x-blocks cover a row (vocab-wide),
// y-blocks stride over rows. tanhf is the accurate one: capped logits feed
// argmax and sampling, where a fast approximation could reorder near-ties.
template <int V>
__global__ void softcap_kernel(float* x, int64_t ld, int64_t rows, int64_t cols, float cap) {
  const int64_t c = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (c >= cols) return;
  const float inv_cap = 1.f / cap;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    float v[V];
    load_vec<V>(x + r * ld + c, v);
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = tanhf(v[i] * inv_cap) * cap;
    store_vec<V>(x + r * ld + c, v);
  }
}

}  // namespace

void softcap(const Tensor& x, float cap, cudaStream_t stream) {
  expect_tensor(x, DType::F32, "softcap", "x");
  if (!(cap > 0.f)) fail("softcap", "cap must be positive");
  if (x.empty()) return;
  const int v = vector_elems(x.cols, 4, {&x});
  const int64_t blocks_x = (x.cols / v + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(std::min<int64_t>(x.rows, 65535)));
  switch (v) {
    case 4:
      softcap_kernel<4><<<grid, kThreads, 0, stream>>>(x.as<float>(), x.ld, x.rows, x.cols, cap);
      break;
    case 2:
      softcap_kernel<2><<<grid, kThreads, 0, stream>>>(x.as<float>(), x.ld, x.rows, x.cols, cap);
      break;
    default:
      softcap_kernel<1><<<grid, kThreads, 0, stream>>>(x.as<float>(), x.ld, x.rows, x.cols, cap);
      break;
  }
  check(cudaGetLastError(), "softcap kernel launch");
}

}  // namespace flashdraft::ops::cuda
