#include <climits>
#include <string>

#include "ops/argmax_key.h"
#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kUnroll = 4;

// (value, index) with the reference's rule: larger value wins, the smaller
// index on equal values. NaN never wins (it compares false both ways), as in
// the CPU reference's strict `>` scan.
__device__ __forceinline__ void take_better(float& best, int& best_i, float v, int i) {
  if (v > best || (v == best && i < best_i)) {
    best = v;
    best_i = i;
  }
}

// One block per row: greedy decode reads a handful of vocab-wide rows. A
// single SM's share of HBM bandwidth is set by the bytes it has in flight, so
// each of the 1024 threads issues kUnroll 16-byte loads before comparing any.
// Then a warp-shuffle reduction of (value, index) pairs. Indices fit int:
// vocabularies are < 2^31.
template <int V, class T>
__global__ void __launch_bounds__(kThreads)
    argmax_kernel(const T* __restrict__ x, int64_t ld, int cols, int32_t* __restrict__ out, int64_t ld_out,
                  int offset, bool key) {
  const T* row = x + blockIdx.x * ld;
  float best = -INFINITY;
  int best_i = INT_MAX;
  const int stride = kThreads * V;
  int c = threadIdx.x * V;
  for (; c + (kUnroll - 1) * stride < cols; c += kUnroll * stride) {
    float v[kUnroll][V];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) load_vec<V>(row + c + u * stride, v[u]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int i = 0; i < V; ++i) take_better(best, best_i, v[u][i], c + u * stride + i);
  }
  for (; c < cols; c += stride) {
    float v[V];
    load_vec<V>(row + c, v);
#pragma unroll
    for (int i = 0; i < V; ++i) take_better(best, best_i, v[i], c + i);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, offset);
    const int oi = __shfl_xor_sync(0xffffffffu, best_i, offset);
    take_better(best, best_i, ov, oi);
  }
  __shared__ float warp_best[kThreads / 32];
  __shared__ int warp_idx[kThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    warp_best[warp] = best;
    warp_idx[warp] = best_i;
  }
  __syncthreads();
  if (warp != 0) return;
  best = lane < kThreads / 32 ? warp_best[lane] : -INFINITY;
  best_i = lane < kThreads / 32 ? warp_idx[lane] : INT_MAX;
  for (int offset = 16; offset > 0; offset /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, offset);
    const int oi = __shfl_xor_sync(0xffffffffu, best_i, offset);
    take_better(best, best_i, ov, oi);
  }
  // An all-NaN row picks nothing; 0 is what the CPU reference returns then.
  if (lane != 0) return;
  out[blockIdx.x * ld_out] = offset + (best_i == INT_MAX ? 0 : best_i);
  // argmax_key: the value's word next to the index (ops/argmax_key.h).
  if (key)
    out[blockIdx.x * ld_out + 1] =
        static_cast<int32_t>(best_i == INT_MAX ? 0xffffffffu : argmax_key::high_word(best));
}

template <class T>
void launch(const Tensor& x, const Tensor& out, int offset, bool key, cudaStream_t stream) {
  const int v = vector_elems(x.cols, sizeof(T), {&x});
  const dim3 grid(static_cast<unsigned>(x.rows));
  const int cols = static_cast<int>(x.cols);
  FD_DISPATCH_VEC(v, V,
                  argmax_kernel<V, T><<<grid, kThreads, 0, stream>>>(x.as<T>(), x.ld, cols, out.as<int32_t>(), out.ld,
                                                                      offset, key));
}

}  // namespace

void argmax(const Tensor& x, const Tensor& out, cudaStream_t stream) {
  expect_tensor(x, DType::F32, DType::BF16, "argmax", "x");
  expect_tensor(out, DType::I32, "argmax", "out");
  expect_shape(out, x.rows, 1, "argmax", "out");
  if (x.rows == 0) return;
  if (x.cols == 0 || x.cols > INT_MAX) fail("argmax", "x has " + std::to_string(x.cols) + " columns");
  if (x.dtype == DType::F32)
    launch<float>(x, out, 0, false, stream);
  else
    launch<bf16>(x, out, 0, false, stream);
  check(cudaGetLastError(), "argmax kernel launch");
}

void argmax_key(const Tensor& x, int64_t offset, const Tensor& keys, cudaStream_t stream) {
  expect_tensor(x, DType::F32, "argmax_key", "x");
  expect_tensor(keys, DType::I32, "argmax_key", "keys");
  expect_shape(keys, x.rows, 2, "argmax_key", "keys");
  if (x.rows == 0) return;
  if (x.cols == 0 || offset < 0 || offset + x.cols > INT_MAX)
    fail("argmax_key", "x has " + std::to_string(x.cols) + " columns at offset " + std::to_string(offset));
  launch<float>(x, keys, static_cast<int>(offset), true, stream);
  check(cudaGetLastError(), "argmax_key kernel launch");
}

}  // namespace flashdraft::ops::cuda
