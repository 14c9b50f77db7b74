#include <algorithm>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

// One block per output row: a token's row is a few KB of contiguous table, so
// a block streams it with 16-byte loads. The scale (Gemma-style sqrt(hidden),
// 1 elsewhere) is applied in f32 and rounded once. Ids are validated on the
// host before upload; one that is out of range anyway writes NaN rather than
// reading outside the table, so the bug shows in the output.
template <int V, class Out>
__global__ void embedding_kernel(const bf16* __restrict__ table, int64_t ldt, int64_t vocab,
                                 const int32_t* __restrict__ ids, int64_t ld_ids, Out* __restrict__ out, int64_t ldo,
                                 int64_t cols, float scale) {
  const int32_t id = ids[blockIdx.x * ld_ids];
  Out* orow = out + blockIdx.x * ldo;
  const bool valid = id >= 0 && id < vocab;
  const bf16* trow = table + (valid ? id : 0) * ldt;
  for (int64_t c = threadIdx.x * V; c < cols; c += blockDim.x * V) {
    float v[V];
    load_vec<V>(trow + c, v);
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = valid ? v[i] * scale : __int_as_float(0x7fc00000);
    store_vec<V>(orow + c, v);
  }
}

}  // namespace

void embedding(const Tensor& table, const Tensor& ids, const Tensor& out, float scale, cudaStream_t stream) {
  expect_tensor(table, DType::BF16, "embedding", "table");
  expect_tensor(ids, DType::I32, "embedding", "ids");
  expect_tensor(out, DType::F32, DType::BF16, "embedding", "out");
  expect_shape(ids, out.rows, 1, "embedding", "ids");
  expect_shape(out, ids.rows, table.cols, "embedding", "out");
  if (out.empty()) return;
  if (table.rows == 0) fail("embedding", "the table is empty");
  const int v = std::min(vector_elems(out.cols, 2, {&table}), vector_elems(out.cols, dtype_size(out.dtype), {&out}));
  const unsigned threads = row_threads(out.cols / v);
  const auto launch = [&](auto* o) {
    FD_DISPATCH_VEC(v, V,
                    embedding_kernel<V><<<static_cast<unsigned>(out.rows), threads, 0, stream>>>(
                        table.as<bf16>(), table.ld, table.rows, ids.as<int32_t>(), ids.ld, o, out.ld, out.cols, scale));
  };
  if (out.dtype == DType::F32)
    launch(out.as<float>());  // the residual stream
  else
    launch(out.as<bf16>());
  check(cudaGetLastError(), "embedding kernel launch");
}

}  // namespace flashdraft::ops::cuda
