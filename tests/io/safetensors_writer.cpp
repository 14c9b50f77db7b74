#include "safetensors_writer.h"

#include <stdlib.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace flashdraft::io::testing {

using nlohmann::json;

std::string f32_bytes(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::string u16_bytes(const std::vector<uint16_t>& values) {
  std::string out(values.size() * 2, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::string safetensors_image_raw(const std::string& header_text, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header_text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header_text + data;
}

std::string safetensors_image(const std::vector<TensorSpec>& tensors,
                              const std::function<void(json&)>& edit_header) {
  json header = json::object();
  std::string data;
  for (const TensorSpec& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  header["__metadata__"] = {{"format", "pt"}};
  if (edit_header) edit_header(header);
  std::string text = header.dump();
  // Real writers pad the header with spaces so the data starts 8-aligned.
  while (text.size() % 8 != 0) text += ' ';
  return safetensors_image_raw(text, data);
}

void write_file(const std::filesystem::path& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void write_sharded(const std::filesystem::path& dir,
                   const std::map<std::string, std::vector<TensorSpec>>& shards,
                   const std::function<void(json&)>& edit_weight_map) {
  json weight_map = json::object();
  size_t total = 0;
  for (const auto& [file, tensors] : shards) {
    write_file(dir / file, safetensors_image(tensors));
    for (const TensorSpec& t : tensors) {
      weight_map[t.name] = file;
      total += t.bytes.size();
    }
  }
  if (edit_weight_map) edit_weight_map(weight_map);
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_file(dir / "model.safetensors.index.json", index.dump(2));
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "fd_io_test_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace flashdraft::io::testing
