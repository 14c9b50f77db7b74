#include <algorithm>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

// One block per row: the row is read twice (sum of squares, then scale), and
// the second read hits L1 for the row sizes LLMs use (8 KB at hidden 4096), so
// HBM sees each byte once. y may be x: every thread rewrites exactly the
// elements it read, after the block-wide sum.
template <int V, class X>
__global__ void rmsnorm_kernel(const X* x, int64_t ldx, const bf16* __restrict__ w, bf16* y, int64_t ldy,
                               int64_t cols, float eps) {
  let_dependents_launch();  // the qkv projection or the lm head
  const X* xr = x + blockIdx.x * ldx;
  bf16* yr = y + blockIdx.x * ldy;
  float sum = 0.f;
  for (int64_t c = threadIdx.x * V; c < cols; c += blockDim.x * V) {
    float v[V];
    load_vec<V>(xr + c, v);
#pragma unroll
    for (int i = 0; i < V; ++i) sum += v[i] * v[i];
  }
  const float inv_rms = rsqrtf(block_sum(sum) / static_cast<float>(cols) + eps);
  for (int64_t c = threadIdx.x * V; c < cols; c += blockDim.x * V) {
    float v[V], g[V];
    load_vec<V>(xr + c, v);
    load_vec<V>(w + c, g);
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = v[i] * inv_rms * g[i];
    store_vec<V>(yr + c, v);
  }
}

}  // namespace

void rmsnorm(const Tensor& x, const Tensor& w, const Tensor& y, float eps, cudaStream_t stream) {
  // x: the f32 residual stream (a layer's input norm) or bf16 (the drafter's context rows, in place).
  expect_tensor(x, DType::F32, DType::BF16, "rmsnorm", "x");
  expect_tensor(w, DType::BF16, "rmsnorm", "w");
  expect_tensor(y, DType::BF16, "rmsnorm", "y");
  expect_shape(w, 1, x.cols, "rmsnorm", "w");
  expect_shape(y, x.rows, x.cols, "rmsnorm", "y");
  if (x.data == y.data && x.dtype != y.dtype) fail("rmsnorm", "in place needs x and y of one dtype");
  if (x.empty()) return;
  const int v = std::min(vector_elems(x.cols, dtype_size(x.dtype), {&x}), vector_elems(x.cols, 2, {&w, &y}));
  const unsigned threads = row_threads(x.cols / v);
  const auto launch = [&](const auto* xp) {
    FD_DISPATCH_VEC(v, V,
                    rmsnorm_kernel<V><<<static_cast<unsigned>(x.rows), threads, 0, stream>>>(
                        xp, x.ld, w.as<bf16>(), y.as<bf16>(), y.ld, x.cols, eps));
  };
  if (x.dtype == DType::F32)
    launch(x.as<float>());
  else
    launch(x.as<bf16>());
  check(cudaGetLastError(), "rmsnorm kernel launch");
}

}  // namespace flashdraft::ops::cuda
