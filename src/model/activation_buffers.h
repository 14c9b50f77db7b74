#pragma once
// Output buffers are kept across forwards and only ever grow, so steady
// decoding allocates nothing.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "ops/backend.h"

namespace flashdraft::model {

// Counts moves of these buffers (a reallocation to grow) in this process. A
// captured graph (Backend::capture) names the memory it ran on, so its owner
// recaptures when this count changed since the capture.
inline std::atomic<uint64_t>& buffer_moves() {
  static std::atomic<uint64_t> moves{0};
  return moves;
}

// Makes t hold at least rows x cols of dtype (contents are not kept) and
// returns the view of exactly rows x cols at its start.
inline ops::Tensor grow_tensor(ops::Backend& backend, ops::OwnedTensor& t, ops::DType dtype, int64_t rows,
                               int64_t cols) {
  const auto need = static_cast<size_t>(rows * cols) * ops::dtype_size(dtype);
  if (t.buffer.bytes() < need || t.t.cols != cols || t.t.dtype != dtype) {
    const int64_t cap_rows = std::max<int64_t>(rows, t.t.cols == cols ? 2 * t.t.rows : rows);
    t = backend.alloc_tensor(dtype, std::max<int64_t>(cap_rows, 1), cols);
    ++buffer_moves();
  }
  return t.buffer.view(dtype, rows, cols);
}

}  // namespace flashdraft::model
