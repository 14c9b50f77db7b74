#pragma once
// Parsing and validation of one .safetensors file:
//   8 bytes little-endian header length N | N bytes JSON header | raw data.
// The JSON maps tensor name -> {dtype, shape, data_offsets: [begin, end]}
// (offsets relative to the start of the data section), plus an optional
// "__metadata__" object of strings.
#include <vector>

#include "io/mapped_file.h"
#include "io/tensor_view.h"

namespace flashdraft::io {

// Returns the tensors of `file`, sorted by name, pointing into its map.
// Throws flashdraft::Error naming the file (and tensor, where there is one)
// with what was expected and what was found, for: a file too short for the
// length prefix, a header running past the end of the file, bad JSON,
// duplicate tensor names, an unsupported dtype, malformed shape/offsets,
// offsets outside the data section, a byte length that disagrees with
// shape x dtype size, and tensors whose byte ranges overlap.
std::vector<TensorView> read_safetensors_header(const MappedFile& file);

}  // namespace flashdraft::io
