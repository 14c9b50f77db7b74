#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

// blockIdx.x is the token row, blockIdx.y picks K (0) or V (1): both scatters
// in one launch. k and v are usually column slices of the fused qkv output,
// so rows are read with their own stride. A slot outside the pool is the
// caller's bug (slots come from the block manager); it is skipped rather than
// written out of bounds, and negative slots double as "padding, store nothing".
template <int V>
__global__ void store_kv_kernel(const bf16* __restrict__ k, int64_t ldk, const bf16* __restrict__ v, int64_t ldv,
                                const int32_t* __restrict__ slots, bf16* __restrict__ k_cache, int64_t ldkc,
                                bf16* __restrict__ v_cache, int64_t ldvc, int64_t pool_rows, int64_t cols) {
  const int32_t slot = slots[blockIdx.x];
  if (slot < 0 || slot >= pool_rows) return;
  const bool is_v = blockIdx.y == 1;
  const bf16* src = is_v ? v + blockIdx.x * ldv : k + blockIdx.x * ldk;
  bf16* dst = is_v ? v_cache + slot * ldvc : k_cache + slot * ldkc;
  for (int64_t c = threadIdx.x * V; c < cols; c += blockDim.x * V)
    *reinterpret_cast<Vec<bf16, V>*>(dst + c) = *reinterpret_cast<const Vec<bf16, V>*>(src + c);
}

}  // namespace

void store_kv(const Tensor& k, const Tensor& v, const int32_t* slots, const Tensor& k_cache, const Tensor& v_cache,
              cudaStream_t stream) {
  expect_tensor(k, DType::BF16, "store_kv", "k");
  expect_tensor(v, DType::BF16, "store_kv", "v");
  expect_tensor(k_cache, DType::BF16, "store_kv", "k_cache");
  expect_tensor(v_cache, DType::BF16, "store_kv", "v_cache");
  expect_shape(v, k.rows, k.cols, "store_kv", "v");
  expect_shape(k_cache, k_cache.rows, k.cols, "store_kv", "k_cache");
  expect_shape(v_cache, k_cache.rows, k.cols, "store_kv", "v_cache");
  expect_pointer(slots, k.rows, "store_kv", "slots");
  if (k.empty()) return;
  const int vec = vector_elems(k.cols, 2, {&k, &v, &k_cache, &v_cache});
  const dim3 grid(static_cast<unsigned>(k.rows), 2);
  const unsigned threads = row_threads(k.cols / vec);
  FD_DISPATCH_VEC(vec, V,
                  store_kv_kernel<V>
                  <<<grid, threads, 0, stream>>>(k.as<bf16>(), k.ld, v.as<bf16>(), v.ld, slots, k_cache.as<bf16>(),
                                                 k_cache.ld, v_cache.as<bf16>(), v_cache.ld, k_cache.rows, k.cols));
  check(cudaGetLastError(), "store_kv kernel launch");
}

}  // namespace flashdraft::ops::cuda
