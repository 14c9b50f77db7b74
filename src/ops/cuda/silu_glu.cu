#include <algorithm>
#include <string>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/glu_math.cuh"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kThreads = 256;

// gate_up is the fused [gate | up] projection, so gate and up of one element
// sit `inter` apart in the same row; or, with `run` > 0 (the product of a
// GluTiles weight), runs of `run` gate columns each followed by the `run`
// matching up columns. x-blocks cover a row's columns and y-blocks stride
// over rows (prefill can exceed the 65535 grid-y limit). silu and the
// product are done in f32 (glu_math.cuh) and rounded once.
template <int V>
__global__ void silu_glu_kernel(const bf16* gate_up, int64_t ld_in, bf16* out, int64_t ld_out, int64_t rows,
                                int64_t inter, int64_t run) {
  let_dependents_launch();  // the down projection
  const int64_t c = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (c >= inter) return;
  const int64_t gate = run > 0 ? c / run * 2 * run + c % run : c, up = gate + (run > 0 ? run : inter);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    float g[V], u[V];
    load_vec<V>(gate_up + r * ld_in + gate, g);
    load_vec<V>(gate_up + r * ld_in + up, u);
#pragma unroll
    for (int i = 0; i < V; ++i) g[i] = glu_math::silu_times(g[i], u[i]);
    store_vec<V>(out + r * ld_out + c, g);
  }
}

}  // namespace

void silu_glu(const Tensor& gate_up, const Tensor& out, cudaStream_t stream, int64_t run) {
  expect_tensor(gate_up, DType::BF16, "silu_glu", "gate_up");
  expect_tensor(out, DType::BF16, "silu_glu", "out");
  expect_shape(gate_up, out.rows, 2 * out.cols, "silu_glu", "gate_up");
  if (out.empty()) return;
  if (run < 0 || (run > 0 && out.cols % run != 0))
    fail("silu_glu",
         "gate/up runs of " + std::to_string(run) + " do not tile " + std::to_string(out.cols) + " columns");
  int v = vector_elems(out.cols, 2, {&gate_up, &out});
  while (run > 0 && run % v != 0) v /= 2;  // a vector never straddles two runs
  const int64_t blocks_x = (out.cols / v + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(std::min<int64_t>(out.rows, 65535)));
  FD_DISPATCH_VEC(v, V,
                  silu_glu_kernel<V><<<grid, kThreads, 0, stream>>>(gate_up.as<bf16>(), gate_up.ld, out.as<bf16>(),
                                                                    out.ld, out.rows, out.cols, run));
  check(cudaGetLastError(), "silu_glu kernel launch");
}

}  // namespace flashdraft::ops::cuda
