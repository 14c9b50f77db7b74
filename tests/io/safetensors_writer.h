#pragma once
// Builds small .safetensors files (and broken variants) for tests.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flashdraft::io::testing {

struct TensorSpec {
  std::string name;
  std::string dtype;  // safetensors spelling, e.g. "BF16" (any string, to test rejects)
  std::vector<int64_t> shape;
  std::string bytes;  // raw little-endian element bytes
};

std::string f32_bytes(const std::vector<float>& values);
std::string u16_bytes(const std::vector<uint16_t>& values);  // bf16 / f16 bit patterns

// The file image: length prefix, JSON header (offsets laid out back to back),
// data. `edit_header` may corrupt the header JSON before it is serialised.
std::string safetensors_image(const std::vector<TensorSpec>& tensors,
                              const std::function<void(nlohmann::json&)>& edit_header = {});
// A file image around an arbitrary header text (for bad JSON).
std::string safetensors_image_raw(const std::string& header_text, const std::string& data);

void write_file(const std::filesystem::path& path, const std::string& contents);

// Writes `shards` (file name -> tensors) and an index mapping each tensor to
// the file it was written into, with `edit_weight_map` applied to the map.
void write_sharded(const std::filesystem::path& dir,
                   const std::map<std::string, std::vector<TensorSpec>>& shards,
                   const std::function<void(nlohmann::json&)>& edit_weight_map = {});

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace flashdraft::io::testing
