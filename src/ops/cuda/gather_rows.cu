#include "ops/cuda/checks.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

// A pure byte move, so one kernel serves every dtype: rows are copied in
// units of U (16 bytes where the row length and strides allow). One block per
// destination row. An index outside src is the caller's bug; that row is left
// unwritten rather than read out of bounds.
template <class U>
__global__ void gather_rows_kernel(const char* __restrict__ src, int64_t src_pitch, int64_t src_rows,
                                   const int32_t* __restrict__ rows, char* __restrict__ dst, int64_t dst_pitch,
                                   int64_t units) {
  const int32_t r = rows[blockIdx.x];
  if (r < 0 || r >= src_rows) return;
  const U* s = reinterpret_cast<const U*>(src + r * src_pitch);
  U* d = reinterpret_cast<U*>(dst + blockIdx.x * dst_pitch);
  for (int64_t i = threadIdx.x; i < units; i += blockDim.x) d[i] = s[i];
}

template <class U>
void launch(const Tensor& src, const int32_t* rows, const Tensor& dst, size_t es, cudaStream_t stream) {
  const int64_t units = dst.cols * static_cast<int64_t>(es) / static_cast<int64_t>(sizeof(U));
  gather_rows_kernel<U><<<static_cast<unsigned>(dst.rows), row_threads(units), 0, stream>>>(
      src.as<char>(), src.ld * static_cast<int64_t>(es), src.rows, rows, dst.as<char>(),
      dst.ld * static_cast<int64_t>(es), units);
}

}  // namespace

void gather_rows(const Tensor& src, const int32_t* rows, const Tensor& dst, cudaStream_t stream) {
  expect_tensor(src, src.dtype, "gather_rows", "src");
  expect_tensor(dst, src.dtype, "gather_rows", "dst");
  expect_shape(dst, dst.rows, src.cols, "gather_rows", "dst");
  expect_pointer(rows, dst.rows, "gather_rows", "rows");
  if (dst.empty()) return;
  const size_t es = dtype_size(src.dtype);
  switch (vector_elems(dst.cols, es, {&src, &dst}) * es) {
    case 16:
      launch<uint4>(src, rows, dst, es, stream);
      break;
    case 8:
      launch<uint2>(src, rows, dst, es, stream);
      break;
    case 4:
      launch<uint32_t>(src, rows, dst, es, stream);
      break;
    default:
      launch<uint16_t>(src, rows, dst, es, stream);
      break;
  }
  check(cudaGetLastError(), "gather_rows kernel launch");
}

}  // namespace flashdraft::ops::cuda
