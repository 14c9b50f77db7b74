#include "ops/cuda/checks.h"

#include <cstdint>
#include <string>

#include "core/error.h"
#include "ops/cuda/matmul_tiles.h"

namespace flashdraft::ops::cuda {

void fail(const char* op, const std::string& message) { throw Error(std::string("cuda ") + op + ": " + message); }

std::string describe(const Tensor& t) {
  std::string s = std::to_string(t.rows) + "x" + std::to_string(t.cols) + " " + dtype_name(t.dtype);
  if (t.layout == Layout::MatmulTiles)
    s += " (tiled for matmul)";
  else if (t.layout == Layout::GluTiles)
    s += " (tiled for matmul_silu_glu)";
  else if (t.ld != t.cols)
    s += " (ld " + std::to_string(t.ld) + ")";
  return s;
}

namespace {

void expect_layout(const Tensor& t, const char* op, const char* name, bool tiles_ok = false) {
  if (t.layout != Layout::RowMajor && !tiles_ok)
    fail(op, std::string(name) + " is a weight tiled for matmul (" + describe(t) + "); only matmul reads those");
  if (t.device != Device::CUDA)
    fail(op, std::string(name) + " is a " + device_name(t.device) + " tensor; the CUDA backend needs its own memory");
  if (t.rows < 0 || t.cols < 0 || (t.rows > 1 && t.ld < t.cols))
    fail(op, std::string(name) + " has a bad layout: " + describe(t));
  if (!t.empty() && t.data == nullptr) fail(op, std::string(name) + " is " + describe(t) + " with no data");
}

}  // namespace

void expect_tensor(const Tensor& t, DType dtype, const char* op, const char* name) {
  if (t.dtype != dtype) fail(op, std::string(name) + " is " + describe(t) + ", expected " + dtype_name(dtype));
  expect_layout(t, op, name);
}

void expect_tensor(const Tensor& t, DType a, DType b, const char* op, const char* name) {
  if (t.dtype != a && t.dtype != b)
    fail(op, std::string(name) + " is " + describe(t) + ", expected " + dtype_name(a) + " or " + dtype_name(b));
  expect_layout(t, op, name);
}

void expect_weight(const Tensor& w, DType dtype, const char* op, const char* name) {
  if (w.dtype != dtype) fail(op, std::string(name) + " is " + describe(w) + ", expected " + dtype_name(dtype));
  expect_layout(w, op, name, /*tiles_ok=*/true);
}

void expect_float_tensor(const Tensor& t, const char* op, const char* name) {
  if (t.dtype == DType::I32) fail(op, std::string(name) + " is " + describe(t) + ", expected f32, bf16 or f16");
  expect_layout(t, op, name);
}

void expect_shape(const Tensor& t, int64_t rows, int64_t cols, const char* op, const char* name) {
  if (t.rows != rows || t.cols != cols)
    fail(op,
         std::string(name) + " is " + describe(t) + ", expected " + std::to_string(rows) + "x" + std::to_string(cols));
}

void expect_pointer(const void* p, int64_t n, const char* op, const char* name) {
  if (n > 0 && p == nullptr) fail(op, std::string(name) + " is null for " + std::to_string(n) + " rows");
}

int vector_elems(int64_t cols, size_t elem_bytes, std::initializer_list<const Tensor*> views) {
  int elems = static_cast<int>(16 / elem_bytes);
  auto fits = [&](int v) {
    if (cols % v != 0) return false;
    const size_t bytes = static_cast<size_t>(v) * elem_bytes;
    for (const Tensor* t : views) {
      if (reinterpret_cast<uintptr_t>(t->data) % bytes != 0) return false;
      if (t->rows > 1 && t->ld % v != 0) return false;
    }
    return true;
  };
  while (elems > 1 && !fits(elems)) elems /= 2;
  return elems;
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const auto span = [](const Tensor& t) {
    if (t.empty()) return size_t{0};
    const int64_t elems =
        t.layout != Layout::RowMajor ? matmul_tiles_elems(t.rows, t.cols) : (t.rows - 1) * t.ld + t.cols;
    return static_cast<size_t>(elems) * dtype_size(t.dtype);
  };
  const auto* a0 = static_cast<const char*>(a.data);
  const auto* b0 = static_cast<const char*>(b.data);
  return a0 < b0 + span(b) && b0 < a0 + span(a);
}

}  // namespace flashdraft::ops::cuda
