#include <string>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kWarps = 4;

// One block per (token row, group of kWarps heads), one warp per head: a
// decode step has a single row, and one block walking all 32 heads in turn
// was latency-bound (7.5 us on an H100). cos/sin depend only on (position,
// i), so each block computes them once into shared memory for its heads. The angle is the f32 product pos * inv_freq[i]
// (as Hugging Face forms it) and sincosf is the accurate libdevice one: at
// positions in the tens of thousands the angle is large and a fast __sinf
// would drift. The normed value stays in f32 through the rotation, so the
// output is rounded to bf16 once. Works in place on a strided column slice
// (q or k of a fused qkv output): only this row's head columns are touched.
template <int V, bool kNorm>
__global__ void head_norm_rope_kernel(bf16* x, int64_t ldx, int heads, int head_dim, const bf16* __restrict__ norm_w,
                                      const int32_t* __restrict__ positions, const float* __restrict__ inv_freq,
                                      float attention_factor, float eps) {
  extern __shared__ float table[];  // cos [half], then sin [half]
  const int half = head_dim / 2;
  float* cos_t = table;
  float* sin_t = table + half;
  const float pos = static_cast<float>(positions[blockIdx.x]);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    float s, c;
    sincosf(pos * inv_freq[i], &s, &c);
    cos_t[i] = c * attention_factor;
    sin_t[i] = s * attention_factor;
  }
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int h = blockIdx.y * kWarps + warp; h < heads; h += kWarps * gridDim.y) {
    bf16* head = x + blockIdx.x * ldx + static_cast<int64_t>(h) * head_dim;
    float scale = 1.f;
    if (kNorm) {
      float sum = 0.f;
      for (int c = lane * V; c < head_dim; c += 32 * V) {
        float v[V];
        load_vec<V>(head + c, v);
#pragma unroll
        for (int i = 0; i < V; ++i) sum += v[i] * v[i];
      }
      scale = rsqrtf(warp_sum(sum) / static_cast<float>(head_dim) + eps);
    }
    for (int c = lane * V; c < half; c += 32 * V) {
      float a[V], b[V];
      load_vec<V>(head + c, a);
      load_vec<V>(head + c + half, b);
      if (kNorm) {
        float wa[V], wb[V];
        load_vec<V>(norm_w + c, wa);
        load_vec<V>(norm_w + c + half, wb);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          a[i] = a[i] * scale * wa[i];
          b[i] = b[i] * scale * wb[i];
        }
      }
      float ra[V], rb[V];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float co = cos_t[c + i], si = sin_t[c + i];
        ra[i] = a[i] * co - b[i] * si;
        rb[i] = b[i] * co + a[i] * si;
      }
      store_vec<V>(head + c, ra);
      store_vec<V>(head + c + half, rb);
    }
  }
}

}  // namespace

void head_norm_rope(const Tensor& x, int64_t heads, int64_t head_dim, const Tensor* norm_w, const int32_t* positions,
                    const Rope& rope, float eps, cudaStream_t stream) {
  const char* op = "head_norm_rope";
  expect_tensor(x, DType::BF16, op, "x");
  if (heads <= 0 || head_dim <= 0 || head_dim % 2 != 0)
    fail(op, "needs heads > 0 and an even head_dim, got " + std::to_string(heads) + " heads of " +
                 std::to_string(head_dim));
  expect_shape(x, x.rows, heads * head_dim, op, "x");
  expect_tensor(rope.inv_freq, DType::F32, op, "rope.inv_freq");
  expect_shape(rope.inv_freq, 1, head_dim / 2, op, "rope.inv_freq");
  if (norm_w) {
    expect_tensor(*norm_w, DType::BF16, op, "norm_w");
    expect_shape(*norm_w, 1, head_dim, op, "norm_w");
  }
  expect_pointer(positions, x.rows, op, "positions");
  if (x.empty()) return;
  const int64_t half = head_dim / 2;
  const size_t smem = 2 * static_cast<size_t>(half) * sizeof(float);
  if (smem > 48 * 1024) fail(op, "head_dim " + std::to_string(head_dim) + " is larger than supported");
  const Tensor none{};
  const int v = vector_elems(half, 2, {&x, norm_w ? norm_w : &none});
  const dim3 grid(static_cast<unsigned>(x.rows), static_cast<unsigned>((heads + kWarps - 1) / kWarps));
  const bf16* w = norm_w ? norm_w->as<bf16>() : nullptr;
  const int h = static_cast<int>(heads), d = static_cast<int>(head_dim);
  const float* inv_freq = rope.inv_freq.as<float>();
  if (norm_w) {
    FD_DISPATCH_VEC(v, V,
                    head_norm_rope_kernel<V, true><<<grid, kWarps * 32, smem, stream>>>(
                        x.as<bf16>(), x.ld, h, d, w, positions, inv_freq, rope.attention_factor, eps));
  } else {
    FD_DISPATCH_VEC(v, V,
                    head_norm_rope_kernel<V, false><<<grid, kWarps * 32, smem, stream>>>(
                        x.as<bf16>(), x.ld, h, d, w, positions, inv_freq, rope.attention_factor, eps));
  }
  check(cudaGetLastError(), "head_norm_rope kernel launch");
}

}  // namespace flashdraft::ops::cuda
