#include "io/checkpoint.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/error.h"
#include "io/json_text.h"
#include "io/safetensors_header.h"

namespace flashdraft::io {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// tensor name -> shard file name, as the index states it.
std::map<std::string, std::string> read_weight_map(const fs::path& index_path) {
  const std::string where = index_path.string();
  const json index = parse_json(read_text_file(index_path), where, /*reject_duplicate_keys=*/true);
  if (!index.is_object() || !index.contains("weight_map")) {
    throw Error(where + ": expected an object with a \"weight_map\" {tensor: file}");
  }
  const json& weight_map = index["weight_map"];
  if (!weight_map.is_object()) {
    throw Error(where + ": \"weight_map\": expected an object {tensor: file}, found " +
                json_excerpt(weight_map));
  }
  std::map<std::string, std::string> result;
  for (const auto& [tensor, file] : weight_map.items()) {
    if (!file.is_string()) {
      throw Error(where + ": tensor '" + tensor + "': expected a shard file name, found " +
                  json_excerpt(file));
    }
    const fs::path shard(file.get<std::string>());
    // Shards live inside the model directory; anything else is a broken or
    // hostile index.
    bool escapes = shard.empty() || shard.is_absolute();
    for (const auto& part : shard) escapes = escapes || part == "..";
    if (escapes) {
      throw Error(where + ": tensor '" + tensor + "': shard \"" + shard.string() +
                  "\" is not a file name inside the model directory");
    }
    result.emplace(tensor, shard.string());
  }
  return result;
}

// Common prefix length, to suggest the intended tensor name on a typo.
size_t shared_prefix(std::string_view a, std::string_view b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

Checkpoint Checkpoint::open(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(dir.string() + ": not a model directory (expected a directory holding " +
                kSingleFile + " or " + kIndexFile + ")");
  }
  Checkpoint ckpt;
  ckpt.dir_ = dir;
  if (fs::exists(dir / kSingleFile, ec)) {
    ckpt.add_file(dir / kSingleFile);
    return ckpt;
  }
  const fs::path index_path = dir / kIndexFile;
  if (!fs::exists(index_path, ec)) {
    throw Error(dir.string() + ": no " + kSingleFile + " or " + kIndexFile + " found");
  }
  const std::string index_name = index_path.string();
  const auto weight_map = read_weight_map(index_path);

  std::map<std::string, std::vector<std::string>> tensors_of_shard;
  for (const auto& [tensor, shard] : weight_map) tensors_of_shard[shard].push_back(tensor);
  for (const auto& [shard, listed] : tensors_of_shard) {
    if (!fs::exists(dir / shard, ec)) {
      throw Error(index_name + ": shard file " + (dir / shard).string() +
                  " does not exist (the index maps " + std::to_string(listed.size()) +
                  " tensors to it, e.g. '" + listed.front() + "')");
    }
  }

  // Read every shard's header before judging, so that a tensor stored twice
  // is reported as a duplicate rather than as "not in the index".
  std::map<std::string, std::vector<std::string>> shards_of_tensor;
  std::vector<std::vector<TensorView>> headers;
  for (const auto& [shard, listed] : tensors_of_shard) {
    ckpt.files_.emplace_back(dir / shard);
    headers.push_back(read_safetensors_header(ckpt.files_.back()));
    for (const TensorView& t : headers.back()) shards_of_tensor[t.name].push_back(shard);
  }
  for (const auto& [tensor, shards] : shards_of_tensor) {
    if (shards.size() > 1) {
      std::string list;
      for (const auto& s : shards) list += (list.empty() ? "" : ", ") + (dir / s).string();
      throw Error(index_name + ": tensor '" + tensor + "' is stored in " +
                  std::to_string(shards.size()) + " shards (" + list +
                  "); expected exactly one");
    }
  }
  for (const auto& [tensor, shard] : weight_map) {
    auto found = shards_of_tensor.find(tensor);
    if (found == shards_of_tensor.end() || found->second.front() != shard) {
      throw Error(index_name + ": tensor '" + tensor + "' is listed in shard " +
                  (dir / shard).string() + " but that file does not contain it" +
                  (found == shards_of_tensor.end()
                       ? std::string(" (no shard does)")
                       : " (it is in " + (dir / found->second.front()).string() + ")"));
    }
  }
  for (const auto& [tensor, shards] : shards_of_tensor) {
    if (!weight_map.contains(tensor)) {
      throw Error(index_name + ": tensor '" + tensor + "' is in shard " +
                  (dir / shards.front()).string() +
                  " but the index does not list it (expected every stored tensor in weight_map)");
    }
  }
  for (auto& header : headers) {
    for (TensorView& t : header) {
      std::string name = t.name;
      ckpt.tensors_.emplace(std::move(name), std::move(t));
    }
  }
  return ckpt;
}

void Checkpoint::add_file(const fs::path& path) {
  files_.emplace_back(path);
  for (TensorView& t : read_safetensors_header(files_.back())) {
    std::string name = t.name;
    tensors_.emplace(std::move(name), std::move(t));
  }
}

bool Checkpoint::contains(std::string_view name) const { return tensors_.find(name) != tensors_.end(); }

const TensorView& Checkpoint::get(std::string_view name) const {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  std::string message = dir_.string() + ": no tensor named '" + std::string(name) +
                        "' in the checkpoint (" + std::to_string(tensors_.size()) + " tensors";
  const std::string* nearest = nullptr;
  size_t best = 0;
  for (const auto& [candidate, view] : tensors_) {
    size_t n = shared_prefix(candidate, name);
    if (n > best) best = n, nearest = &candidate;
  }
  if (nearest != nullptr) message += "; nearest name: '" + *nearest + "'";
  throw Error(message + ")");
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, view] : tensors_) out.push_back(name);
  return out;
}

std::vector<float> Checkpoint::load_f32(std::string_view name,
                                        std::span<const int64_t> expected_shape) const {
  const TensorView& t = get(name);
  if (!std::equal(t.shape.begin(), t.shape.end(), expected_shape.begin(), expected_shape.end())) {
    throw Error(t.file + ": tensor '" + t.name + "' has shape " + shape_to_string(t.shape) +
                ", expected " +
                shape_to_string(std::vector<int64_t>(expected_shape.begin(), expected_shape.end())) +
                " (does config.json match these weights?)");
  }
  std::vector<float> out(static_cast<size_t>(t.numel()));
  widen_to_f32(t.dtype, t.data, out.size(), out.data());
  return out;
}

size_t Checkpoint::total_bytes() const {
  size_t total = 0;
  for (const auto& [name, view] : tensors_) total += view.nbytes;
  return total;
}

}  // namespace flashdraft::io
