#include <algorithm>
#include <string>
#include <type_traits>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernel_launch.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

// The residual update and the next layer's norm in one pass (as vLLM's
// fused_add_rms_norm), with the residual kept in f32 (backend.h says why).
// One block per row, up to 1024 threads, each holding its kIters vectors of
// the sum in registers between the two passes: every global load is issued
// before the first reduction, so a decode row (one block on the whole GPU)
// waits for memory once, not once per loop trip (6 us -> ~2 us at hidden
// 4096). y may alias delta: delta is fully read before y is written. out
// (may be null) gets the updated residual in bf16: a drafter's tap.
template <int V, int kIters>
__global__ void __launch_bounds__(1024) add_rmsnorm_kernel(float* residual, int64_t ldr, const bf16* delta, int64_t ldd,
                                   const bf16* __restrict__ w, bf16* y, int64_t ldy, bf16* __restrict__ out,
                                   int64_t ldo, int64_t cols, float eps) {
  let_dependents_launch();  // the next qkv or gate_up projection
  // Launched as a programmatic dependent of the projection that wrote delta
  // (calls of more than kEarlyLaunchRows rows): nothing is read or written
  // before that grid is done. Otherwise a no-op.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  float* rr = residual + blockIdx.x * ldr;
  const bf16* dr = delta + blockIdx.x * ldd;
  bf16* yr = y + blockIdx.x * ldy;
  bf16* orow = out ? out + blockIdx.x * ldo : nullptr;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * V;
  float r[kIters][V], g[kIters][V];
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int64_t c = threadIdx.x * V + it * stride;
    if (c < cols) {
      float d[V];
      load_vec<V>(rr + c, r[it]);
      load_vec<V>(dr + c, d);
      load_vec<V>(w + c, g[it]);
#pragma unroll
      for (int i = 0; i < V; ++i) r[it][i] += d[i];
    }
  }
  float sum = 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int64_t c = threadIdx.x * V + it * stride;
    if (c < cols) {
#pragma unroll
      for (int i = 0; i < V; ++i) sum += r[it][i] * r[it][i];
      store_vec<V>(rr + c, r[it]);
      if (orow) store_vec<V>(orow + c, r[it]);
    }
  }
  const float inv_rms = rsqrtf(block_sum(sum) / static_cast<float>(cols) + eps);
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int64_t c = threadIdx.x * V + it * stride;
    if (c < cols) {
      float out[V];
#pragma unroll
      for (int i = 0; i < V; ++i) out[i] = r[it][i] * inv_rms * g[it][i];
      store_vec<V>(yr + c, out);
    }
  }
}

// Calls of more rows than this launch while the projection before them
// still runs, so the GEMM after them is scheduled earlier still. H100,
// bench_cycle at Qwen3-8B shapes, ctx 1k, three interleaved runs against the
// plain launch: the batch-8 cycle (its verify and drafter run 128 rows)
// 12.60-12.68 ms against 12.76-12.80, the batch-32 plain step 8.15-8.22
// against 8.29-8.33. Launched so at every size, the batch-1 plain step took
// 6.13 ms against 6.00-6.03: decode rows and 16-row blocks keep the plain
// launch.
constexpr int64_t kEarlyLaunchRows = 16;

}  // namespace

void add_rmsnorm(const Tensor& residual, const Tensor& delta, const Tensor& w, const Tensor& y, float eps,
                 const Tensor* residual_out, cudaStream_t stream) {
  expect_tensor(residual, DType::F32, "add_rmsnorm", "residual");
  expect_tensor(delta, DType::BF16, "add_rmsnorm", "delta");
  expect_tensor(w, DType::BF16, "add_rmsnorm", "w");
  expect_tensor(y, DType::BF16, "add_rmsnorm", "y");
  expect_shape(delta, residual.rows, residual.cols, "add_rmsnorm", "delta");
  expect_shape(w, 1, residual.cols, "add_rmsnorm", "w");
  expect_shape(y, residual.rows, residual.cols, "add_rmsnorm", "y");
  if (residual_out) {
    expect_tensor(*residual_out, DType::BF16, "add_rmsnorm", "residual_out");
    expect_shape(*residual_out, residual.rows, residual.cols, "add_rmsnorm", "residual_out");
  }
  if (residual.empty()) return;
  const Tensor& out = residual_out ? *residual_out : y;  // y: no further constraint on v
  const int v =
      std::min(vector_elems(residual.cols, 4, {&residual}), vector_elems(residual.cols, 2, {&delta, &w, &y, &out}));
  const int64_t vectors = residual.cols / v;
  const int64_t threads = std::min<int64_t>(1024, (vectors + 31) / 32 * 32);
  const int64_t iters = (vectors + threads - 1) / threads;
  if (iters > 8) fail("add_rmsnorm", "rows of " + std::to_string(residual.cols) + " elements are longer than supported");
  const KernelLaunch grid(dim3(static_cast<unsigned>(residual.rows)), dim3(static_cast<unsigned>(threads)), 0, stream,
                          residual.rows > kEarlyLaunchRows);
  const auto launch = [&](auto iters_c) {
    constexpr int kIters = decltype(iters_c)::value;
    FD_DISPATCH_VEC(v, V,
                    check(cudaLaunchKernelEx(&grid.config, add_rmsnorm_kernel<V, kIters>, residual.as<float>(),
                                             residual.ld, delta.as<bf16>(), delta.ld, w.as<bf16>(), y.as<bf16>(), y.ld,
                                             residual_out ? out.as<bf16>() : nullptr, out.ld, residual.cols, eps),
                          "add_rmsnorm kernel launch"));
  };
  if (iters == 1)
    launch(std::integral_constant<int, 1>{});
  else if (iters == 2)
    launch(std::integral_constant<int, 2>{});
  else if (iters <= 4)
    launch(std::integral_constant<int, 4>{});
  else
    launch(std::integral_constant<int, 8>{});
}

}  // namespace flashdraft::ops::cuda
