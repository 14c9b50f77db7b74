#pragma once
// Host-side argument checks shared by the CUDA ops: every op validates its
// views before enqueueing, because a wrong shape on the GPU shows up as a
// silent out-of-bounds read or an asynchronous fault far from its cause.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "ops/backend.h"

namespace flashdraft::ops::cuda {

// `t` must be a CUDA view of `dtype` whose rows do not overlap (ld >= cols).
void expect_tensor(const Tensor& t, DType dtype, const char* op, const char* name);
// Same, for ops that take either of two dtypes.
void expect_tensor(const Tensor& t, DType a, DType b, const char* op, const char* name);
// A CUDA view of any floating dtype (f32, bf16, f16).
void expect_float_tensor(const Tensor& t, const char* op, const char* name);
void expect_shape(const Tensor& t, int64_t rows, int64_t cols, const char* op, const char* name);
// matmul's w: as expect_tensor, and it may also be tiled (Layout::MatmulTiles,
// or GluTiles where matmul_silu_glu runs the matmul).
void expect_weight(const Tensor& w, DType dtype, const char* op, const char* name);
// A device array argument (positions, slots, rows) that must not be null when n > 0.
void expect_pointer(const void* p, int64_t n, const char* op, const char* name);
[[noreturn]] void fail(const char* op, const std::string& message);

// Whether the memory spans of two views (first element to one past the last) intersect.
bool overlaps(const Tensor& a, const Tensor& b);

// "3x4096 bf16 (ld 6144)": for error messages.
std::string describe(const Tensor& t);

// The widest vector, in elements of `elem_bytes` and at most 16 bytes, that
// divides the row length and every view's row starts (base address and ld),
// so a kernel can load whole vectors without straddling rows or misaligning.
int vector_elems(int64_t cols, size_t elem_bytes, std::initializer_list<const Tensor*> views);

// Rows of a view as cuBLAS / cudaMemcpy2D want them: ld may be anything for
// a single row, but pitched copies need ld >= cols.
inline int64_t row_pitch(const Tensor& t) { return t.ld > t.cols ? t.ld : t.cols; }

}  // namespace flashdraft::ops::cuda
