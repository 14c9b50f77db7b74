#pragma once
// Activation buffers are kept across forwards and only ever grow, so steady
// decoding allocates nothing.
#include <cstdint>
#include <vector>

namespace flashdraft::model {

// Makes v hold at least rows x width floats (contents are not kept meaningful).
inline void grow_rows(std::vector<float>& v, int64_t rows, int64_t width) {
  const auto need = static_cast<size_t>(rows * width);
  if (v.size() < need) v.resize(need);
}

}  // namespace flashdraft::model
