#pragma once
// A Hugging Face model directory's weights: `model.safetensors`, or shards
// listed by `model.safetensors.index.json` ({"weight_map": {tensor: file}}).
// When both exist the single file wins, as in transformers.
//
// Sharded checkpoints are checked against their index: a shard file that is
// missing, a tensor the index lists but its shard lacks, a tensor present in
// two shards, and a tensor in a shard that the index does not list are all
// errors (an index that does not describe its shards means files from
// different exports were mixed; loading would silently pick stale weights).
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/mapped_file.h"
#include "io/tensor_view.h"

namespace flashdraft::io {

class Checkpoint {
 public:
  // Throws flashdraft::Error naming the file/tensor and what was expected.
  static Checkpoint open(const std::filesystem::path& dir);

  Checkpoint(Checkpoint&&) noexcept = default;
  Checkpoint& operator=(Checkpoint&&) noexcept = default;

  bool contains(std::string_view name) const;
  // Throws naming the directory and tensor (and the nearest existing name).
  const TensorView& get(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted
  // Widens bf16/f16/f32 to fp32. A shape other than `expected_shape` is an
  // error naming file, tensor, expected and actual shape.
  std::vector<float> load_f32(std::string_view name, std::span<const int64_t> expected_shape) const;
  size_t total_bytes() const;  // sum of tensor byte lengths
  const std::filesystem::path& dir() const { return dir_; }

 private:
  Checkpoint() = default;
  void add_file(const std::filesystem::path& path);

  std::filesystem::path dir_;
  // The views point into these maps; moving a MappedFile keeps its address.
  std::vector<MappedFile> files_;
  std::map<std::string, TensorView, std::less<>> tensors_;
};

}  // namespace flashdraft::io
