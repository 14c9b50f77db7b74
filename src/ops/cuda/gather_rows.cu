#include <string>

#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

// gather_rows and scatter_rows, one kernel: row i of the index list moves
// src[rows[i]] -> dst[i] (gather) or src[i] -> dst[rows[i]] (scatter). A
// pure byte move, so one kernel serves every dtype: rows are copied in units
// of U (16 bytes where the row length and strides allow). One block per
// index. An index outside its tensor is the caller's bug (a negative one is
// scatter's "drop this row"); that row is left alone rather than touched out
// of bounds.
template <class U, bool kScatter>
__global__ void move_rows_kernel(const char* __restrict__ src, int64_t src_pitch, int64_t src_rows,
                                 const int32_t* __restrict__ rows, char* __restrict__ dst, int64_t dst_pitch,
                                 int64_t dst_rows, int64_t units) {
  const int32_t r = rows[blockIdx.x];
  if (r < 0 || r >= (kScatter ? dst_rows : src_rows)) return;
  const U* s = reinterpret_cast<const U*>(src + (kScatter ? blockIdx.x : r) * src_pitch);
  U* d = reinterpret_cast<U*>(dst + (kScatter ? r : blockIdx.x) * dst_pitch);
  for (int64_t i = threadIdx.x; i < units; i += blockDim.x) d[i] = s[i];
}

template <class U, bool kScatter>
void launch(const Tensor& src, const int32_t* rows, int64_t n, const Tensor& dst, size_t es, cudaStream_t stream) {
  const int64_t units = dst.cols * static_cast<int64_t>(es) / static_cast<int64_t>(sizeof(U));
  move_rows_kernel<U, kScatter><<<static_cast<unsigned>(n), row_threads(units), 0, stream>>>(
      src.as<char>(), src.ld * static_cast<int64_t>(es), src.rows, rows, dst.as<char>(),
      dst.ld * static_cast<int64_t>(es), dst.rows, units);
}

// n: the index list's length (gather: dst.rows; scatter: src.rows).
template <bool kScatter>
void move_rows(const Tensor& src, const int32_t* rows, int64_t n, const Tensor& dst, const char* op,
               cudaStream_t stream) {
  expect_tensor(src, src.dtype, op, "src");
  expect_tensor(dst, src.dtype, op, "dst");
  expect_shape(dst, dst.rows, src.cols, op, "dst");
  expect_pointer(rows, n, op, "rows");
  if (n == 0 || src.cols == 0) return;
  const size_t es = dtype_size(src.dtype);
  switch (vector_elems(dst.cols, es, {&src, &dst}) * es) {
    case 16:
      launch<uint4, kScatter>(src, rows, n, dst, es, stream);
      break;
    case 8:
      launch<uint2, kScatter>(src, rows, n, dst, es, stream);
      break;
    case 4:
      launch<uint32_t, kScatter>(src, rows, n, dst, es, stream);
      break;
    default:
      launch<uint16_t, kScatter>(src, rows, n, dst, es, stream);
      break;
  }
  check(cudaGetLastError(), (std::string(op) + " kernel launch").c_str());
}

}  // namespace

void gather_rows(const Tensor& src, const int32_t* rows, const Tensor& dst, cudaStream_t stream) {
  move_rows<false>(src, rows, dst.rows, dst, "gather_rows", stream);
}

void scatter_rows(const Tensor& src, const int32_t* rows, const Tensor& dst, cudaStream_t stream) {
  move_rows<true>(src, rows, src.rows, dst, "scatter_rows", stream);
}

}  // namespace flashdraft::ops::cuda
