#include <algorithm>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

// The residual update and the next layer's norm in one pass (as vLLM's
// fused_add_rms_norm), with the residual kept in f32 (backend.h says why).
// Each thread re-reads only elements it wrote itself, so no barrier beyond
// block_sum's is needed; y may alias delta.
template <int V>
__global__ void add_rmsnorm_kernel(float* residual, int64_t ldr, const bf16* delta, int64_t ldd,
                                   const bf16* __restrict__ w, bf16* y, int64_t ldy, int64_t cols, float eps) {
  float* rr = residual + blockIdx.x * ldr;
  const bf16* dr = delta + blockIdx.x * ldd;
  bf16* yr = y + blockIdx.x * ldy;
  float sum = 0.f;
  for (int64_t c = threadIdx.x * V; c < cols; c += blockDim.x * V) {
    float r[V], d[V];
    load_vec<V>(rr + c, r);
    load_vec<V>(dr + c, d);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      r[i] += d[i];
      sum += r[i] * r[i];
    }
    store_vec<V>(rr + c, r);
  }
  const float inv_rms = rsqrtf(block_sum(sum) / static_cast<float>(cols) + eps);
  for (int64_t c = threadIdx.x * V; c < cols; c += blockDim.x * V) {
    float r[V], g[V];
    load_vec<V>(rr + c, r);
    load_vec<V>(w + c, g);
#pragma unroll
    for (int i = 0; i < V; ++i) r[i] = r[i] * inv_rms * g[i];
    store_vec<V>(yr + c, r);
  }
}

}  // namespace

void add_rmsnorm(const Tensor& residual, const Tensor& delta, const Tensor& w, const Tensor& y, float eps,
                 cudaStream_t stream) {
  expect_tensor(residual, DType::F32, "add_rmsnorm", "residual");
  expect_tensor(delta, DType::BF16, "add_rmsnorm", "delta");
  expect_tensor(w, DType::BF16, "add_rmsnorm", "w");
  expect_tensor(y, DType::BF16, "add_rmsnorm", "y");
  expect_shape(delta, residual.rows, residual.cols, "add_rmsnorm", "delta");
  expect_shape(w, 1, residual.cols, "add_rmsnorm", "w");
  expect_shape(y, residual.rows, residual.cols, "add_rmsnorm", "y");
  if (residual.empty()) return;
  const int v = std::min(vector_elems(residual.cols, 4, {&residual}), vector_elems(residual.cols, 2, {&delta, &w, &y}));
  const unsigned threads = row_threads(residual.cols / v);
  FD_DISPATCH_VEC(v, V,
                  add_rmsnorm_kernel<V><<<static_cast<unsigned>(residual.rows), threads, 0, stream>>>(
                      residual.as<float>(), residual.ld, delta.as<bf16>(), delta.ld, w.as<bf16>(), y.as<bf16>(), y.ld,
                      residual.cols, eps));
  check(cudaGetLastError(), "add_rmsnorm kernel launch");
}

}  // namespace flashdraft::ops::cuda
