#include <string>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"
#include "ops/cuda/rope_math.cuh"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kWarps = 4;

// One block per (token row, group of kWarps heads), one warp per head of the
// row's q | k | v: q heads are normed and rotated in place, k heads normed,
// rotated and written straight into their pool slot, v heads copied there.
// One launch instead of three (q rope, k rope, K/V store): at decode each of
// those was a few microseconds of almost no work.
// cos/sin depend only on (position, i), so each block computes them once into
// shared memory. The arithmetic is rope_math.cuh's, as in the qkv GEMM's fused
// epilogue; with V = head_dim / 32 (what the launcher picks where it can) a
// lane holds the elements that epilogue's lane holds, so both give the same
// bits. The normed value stays in f32 through the rotation: one rounding.
template <int V, bool kNorm>
__global__ void rope_store_kv_kernel(bf16* qkv, int64_t ld, int heads, int kv_heads, int head_dim,
                                     const bf16* __restrict__ q_norm, const bf16* __restrict__ k_norm,
                                     const int32_t* __restrict__ positions, const float* __restrict__ inv_freq,
                                     float attention_factor, float eps, const int32_t* __restrict__ slots,
                                     bf16* __restrict__ k_cache, int64_t ldkc, bf16* __restrict__ v_cache,
                                     int64_t ldvc, int64_t pool_rows) {
  let_dependents_launch();  // the attention, which reads the pool's block tables meanwhile
  extern __shared__ float table[];  // cos [half], then sin [half]
  const int half = head_dim / 2;
  float* cos_t = table;
  float* sin_t = table + half;
  const float pos = static_cast<float>(positions[blockIdx.x]);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    rope_math::cos_sin(pos, inv_freq[i], attention_factor, cos_t[i], sin_t[i]);
  }
  __syncthreads();

  const int32_t slot = slots[blockIdx.x];
  // A slot outside the pool is the caller's bug (slots come from the block
  // manager): nothing is stored rather than writing out of bounds.
  const bool store = slot >= 0 && slot < pool_rows;
  bf16* row = qkv + blockIdx.x * ld;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int units = heads + 2 * kv_heads;
  for (int u = blockIdx.y * kWarps + warp; u < units; u += kWarps * gridDim.y) {
    const bf16* src = row + static_cast<int64_t>(u) * head_dim;
    if (u >= heads + kv_heads) {  // v: a copy
      if (!store) continue;
      bf16* dst = v_cache + slot * ldvc + static_cast<int64_t>(u - heads - kv_heads) * head_dim;
      for (int c = lane * V; c < head_dim; c += 32 * V)
        *reinterpret_cast<Vec<bf16, V>*>(dst + c) = *reinterpret_cast<const Vec<bf16, V>*>(src + c);
      continue;
    }
    const bool is_q = u < heads;
    if (!is_q && !store) continue;
    bf16* dst = is_q ? row + static_cast<int64_t>(u) * head_dim
                     : k_cache + slot * ldkc + static_cast<int64_t>(u - heads) * head_dim;
    const bf16* norm_w = is_q ? q_norm : k_norm;
    float scale = 1.f;
    if (kNorm) {
      float sum = 0.f;
      for (int c = lane * V; c < head_dim; c += 32 * V) {
        float v[V];
        load_vec<V>(src + c, v);
        sum = rope_math::add_squares<V>(v, sum);
      }
      scale = rope_math::rms_factor(sum, head_dim, eps);
    }
    for (int c = lane * V; c < half; c += 32 * V) {
      float a[V], b[V];
      load_vec<V>(src + c, a);
      load_vec<V>(src + c + half, b);
      if (kNorm) {
        float wa[V], wb[V];
        load_vec<V>(norm_w + c, wa);
        load_vec<V>(norm_w + c + half, wb);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          a[i] = rope_math::normed(a[i], scale, wa[i]);
          b[i] = rope_math::normed(b[i], scale, wb[i]);
        }
      }
      float ra[V], rb[V];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float co = cos_t[c + i], si = sin_t[c + i];
        ra[i] = rope_math::rotated_first(a[i], b[i], co, si);
        rb[i] = rope_math::rotated_second(a[i], b[i], co, si);
      }
      store_vec<V>(dst + c, ra);
      store_vec<V>(dst + c + half, rb);
    }
  }
}

}  // namespace

void check_rope_store_kv(const Tensor& qkv, int64_t heads, int64_t kv_heads, int64_t head_dim, const Tensor* q_norm,
                         const Tensor* k_norm, const int32_t* positions, const Rope& rope, const int32_t* slots,
                         const Tensor& k_cache, const Tensor& v_cache) {
  const char* op = "rope_store_kv";
  expect_tensor(qkv, DType::BF16, op, "qkv");
  if (heads < 0 || kv_heads <= 0 || head_dim <= 0 || head_dim % 2 != 0)
    fail(op, "needs heads >= 0, kv_heads > 0 and an even head_dim, got " + std::to_string(heads) + " q heads, " +
                 std::to_string(kv_heads) + " kv heads of " + std::to_string(head_dim));
  expect_shape(qkv, qkv.rows, (heads + 2 * kv_heads) * head_dim, op, "qkv");
  expect_tensor(k_cache, DType::BF16, op, "k_cache");
  expect_tensor(v_cache, DType::BF16, op, "v_cache");
  expect_shape(k_cache, k_cache.rows, kv_heads * head_dim, op, "k_cache");
  expect_shape(v_cache, k_cache.rows, kv_heads * head_dim, op, "v_cache");
  expect_tensor(rope.inv_freq, DType::F32, op, "rope.inv_freq");
  expect_shape(rope.inv_freq, 1, head_dim / 2, op, "rope.inv_freq");
  if ((q_norm == nullptr) != (k_norm == nullptr) && heads > 0) fail(op, "q_norm and k_norm come together");
  for (const Tensor* w : {q_norm, k_norm})
    if (w) {
      expect_tensor(*w, DType::BF16, op, "q_norm / k_norm");
      expect_shape(*w, 1, head_dim, op, "q_norm / k_norm");
    }
  expect_pointer(positions, qkv.rows, op, "positions");
  expect_pointer(slots, qkv.rows, op, "slots");
  if (2 * static_cast<size_t>(head_dim / 2) * sizeof(float) > 48 * 1024)
    fail(op, "head_dim " + std::to_string(head_dim) + " is larger than supported");
}

int rope_lane_elems(const Tensor& qkv, int64_t head_dim, const Tensor* q_norm, const Tensor* k_norm,
                    const Tensor& k_cache, const Tensor& v_cache) {
  const Tensor none{};
  const int v =
      vector_elems(head_dim / 2, 2, {&qkv, &k_cache, &v_cache, q_norm ? q_norm : &none, k_norm ? k_norm : &none});
  // rope_math.cuh's layout (a lane's E = head_dim / 32 elements) where the
  // vectors allow it: the fused GEMM epilogue's bits (head_dim 128: E = 4).
  const int64_t e = head_dim / 32;
  return head_dim % 32 == 0 && e <= v && v % e == 0 ? static_cast<int>(e) : v;
}

void rope_store_kv(const Tensor& qkv, int64_t heads, int64_t kv_heads, int64_t head_dim, const Tensor* q_norm,
                   const Tensor* k_norm, const int32_t* positions, const Rope& rope, float eps, const int32_t* slots,
                   const Tensor& k_cache, const Tensor& v_cache, cudaStream_t stream) {
  check_rope_store_kv(qkv, heads, kv_heads, head_dim, q_norm, k_norm, positions, rope, slots, k_cache, v_cache);
  if (qkv.empty()) return;
  const size_t smem = 2 * static_cast<size_t>(head_dim / 2) * sizeof(float);
  const int v = rope_lane_elems(qkv, head_dim, q_norm, k_norm, k_cache, v_cache);
  const int64_t units = heads + 2 * kv_heads;
  const dim3 grid(static_cast<unsigned>(qkv.rows), static_cast<unsigned>((units + kWarps - 1) / kWarps));
  const bool norm = k_norm != nullptr;
  const bf16* qw = q_norm ? q_norm->as<bf16>() : nullptr;
  const bf16* kw = k_norm ? k_norm->as<bf16>() : nullptr;
  const int h = static_cast<int>(heads), kv = static_cast<int>(kv_heads), d = static_cast<int>(head_dim);
  const float* inv_freq = rope.inv_freq.as<float>();
  if (norm) {
    FD_DISPATCH_VEC(v, V,
                    rope_store_kv_kernel<V, true><<<grid, kWarps * 32, smem, stream>>>(
                        qkv.as<bf16>(), qkv.ld, h, kv, d, qw, kw, positions, inv_freq, rope.attention_factor, eps,
                        slots, k_cache.as<bf16>(), k_cache.ld, v_cache.as<bf16>(), v_cache.ld, k_cache.rows));
  } else {
    FD_DISPATCH_VEC(v, V,
                    rope_store_kv_kernel<V, false><<<grid, kWarps * 32, smem, stream>>>(
                        qkv.as<bf16>(), qkv.ld, h, kv, d, qw, kw, positions, inv_freq, rope.attention_factor, eps,
                        slots, k_cache.as<bf16>(), k_cache.ld, v_cache.as<bf16>(), v_cache.ld, k_cache.rows));
  }
  check(cudaGetLastError(), "rope_store_kv kernel launch");
}

}  // namespace flashdraft::ops::cuda
