#include "ops/backend.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/fp8_grid.h"

namespace flashdraft::ops {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::BF16:
    case DType::F16:
      return 2;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::I32: return "i32";
  }
  return "?";
}

const char* device_name(Device device) { return device == Device::CUDA ? "cuda" : "cpu"; }

const char* weight_quant_name(WeightQuant quant) { return quant == WeightQuant::Fp8 ? "fp8" : "none"; }

namespace {

// A tiled weight's elements are not where rows and ld say: no view of it.
void expect_row_major(const Tensor& t, const char* what) {
  if (t.layout != Layout::RowMajor)
    throw Error(std::string("tensor ") + what + " of a weight tiled for matmul (only matmul reads it)");
}

}  // namespace

Tensor Tensor::row_slice(int64_t r0, int64_t n) const {
  expect_row_major(*this, "row slice");
  if (r0 < 0 || n < 0 || r0 + n > rows)
    throw Error("tensor row slice [" + std::to_string(r0) + ", " + std::to_string(r0 + n) + ") of a tensor with " +
                std::to_string(rows) + " rows");
  Tensor t = *this;
  t.data = static_cast<char*>(data) + static_cast<size_t>(r0 * ld) * dtype_size(dtype);
  t.rows = n;
  return t;
}

Tensor Tensor::col_slice(int64_t c0, int64_t n) const {
  expect_row_major(*this, "column slice");
  if (c0 < 0 || n < 0 || c0 + n > cols)
    throw Error("tensor column slice [" + std::to_string(c0) + ", " + std::to_string(c0 + n) + ") of a tensor with " +
                std::to_string(cols) + " columns");
  Tensor t = *this;
  t.data = static_cast<char*>(data) + static_cast<size_t>(c0) * dtype_size(dtype);
  t.cols = n;
  return t;
}

Tensor Tensor::reshape(int64_t new_rows, int64_t new_cols) const {
  expect_row_major(*this, "reshape");
  if (!contiguous() || new_rows * new_cols != rows * cols)
    throw Error("tensor reshape of a " + std::string(contiguous() ? "" : "strided ") + std::to_string(rows) + "x" +
                std::to_string(cols) + " view to " + std::to_string(new_rows) + "x" + std::to_string(new_cols));
  Tensor t = *this;
  t.rows = new_rows;
  t.cols = new_cols;
  t.ld = new_cols;
  return t;
}

Tensor Buffer::view(DType dtype, int64_t rows, int64_t cols) const {
  const size_t need = static_cast<size_t>(rows * cols) * dtype_size(dtype);
  if (rows < 0 || cols < 0 || need > bytes_)
    throw Error("buffer of " + std::to_string(bytes_) + " bytes viewed as " + std::to_string(rows) + "x" +
                std::to_string(cols) + " " + dtype_name(dtype));
  return Tensor{mem_.get(), dtype, device_, rows, cols, cols};
}

void Backend::prepare_matmul_weight(OwnedTensor& w, WeightQuant quant) {
  if (quant == WeightQuant::None || w.t.empty()) return;
  expect_row_major(w.t, "quantization");
  if (w.t.dtype != DType::F32 && w.t.dtype != DType::BF16)
    throw Error(std::string("fp8 weight quantization of a ") + dtype_name(w.t.dtype) + " weight (f32 or bf16 only)");
  // Row by row through the host: the backend's own copy ops, any device.
  std::vector<float> row(static_cast<size_t>(w.t.cols));
  for (int64_t r = 0; r < w.t.rows; ++r) {
    const Tensor view = w.t.row_slice(r, 1);
    download(view, row.data());
    uint32_t absmax = 0;
    for (float v : row) absmax = std::max(absmax, fp8::magnitude(v));
    const int e = fp8::row_exponent(absmax);
    for (float& v : row) v = fp8::round(v, e);
    upload(view, row.data(), DType::F32);
  }
  w.t.quant = quant;
}

OwnedTensor Backend::alloc_tensor(DType dtype, int64_t rows, int64_t cols) {
  OwnedTensor o;
  o.buffer = alloc(std::max<size_t>(1, static_cast<size_t>(rows * cols) * dtype_size(dtype)));
  o.t = o.buffer.view(dtype, rows, cols);
  return o;
}

}  // namespace flashdraft::ops
