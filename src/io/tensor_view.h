#pragma once
// A tensor inside a memory-mapped checkpoint: metadata plus a pointer into
// the map. Valid as long as the Checkpoint that handed it out lives.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/dtype.h"

namespace flashdraft::io {

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  // Not necessarily aligned to the element size: read through memcpy.
  const std::byte* data = nullptr;
  size_t nbytes = 0;
  std::string file;  // the .safetensors file it lives in, for error messages

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// "[2, 3]"; used in error messages throughout io/.
std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace flashdraft::io
