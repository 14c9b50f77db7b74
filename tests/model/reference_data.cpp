#include "reference_data.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace flashdraft::model::testing {
namespace {

RefArray slice(const std::vector<float>& blob, const nlohmann::json& entry) {
  RefArray a;
  a.shape = entry.at("shape").get<std::vector<int64_t>>();
  size_t n = 1;
  for (int64_t d : a.shape) n *= static_cast<size_t>(d);
  const auto offset = entry.at("offset").get<size_t>();
  if (offset + n > blob.size()) throw std::runtime_error("reference.bin is shorter than reference.json says");
  a.data.assign(blob.begin() + static_cast<std::ptrdiff_t>(offset),
                blob.begin() + static_cast<std::ptrdiff_t>(offset + n));
  return a;
}

}  // namespace

std::filesystem::path fixture(const std::string& name) { return std::filesystem::path(FD_FIXTURES_DIR) / name; }

Reference load_reference(const std::filesystem::path& dir) {
  std::ifstream js(dir / "reference.json");
  if (!js) throw std::runtime_error("cannot open " + (dir / "reference.json").string());
  const auto meta = nlohmann::json::parse(js);
  std::ifstream bin(dir / "reference.bin", std::ios::binary | std::ios::ate);
  if (!bin) throw std::runtime_error("cannot open " + (dir / "reference.bin").string());
  std::vector<float> blob(static_cast<size_t>(bin.tellg()) / sizeof(float));
  bin.seekg(0);
  bin.read(reinterpret_cast<char*>(blob.data()), static_cast<std::streamsize>(blob.size() * sizeof(float)));

  Reference ref;
  ref.inv_freq = slice(blob, meta.at("inv_freq")).data;
  for (const auto& p : meta.at("prompts")) {
    RefPrompt rp;
    rp.ids = p.at("ids").get<std::vector<int32_t>>();
    rp.greedy = p.at("greedy").get<std::vector<int32_t>>();
    rp.logits = slice(blob, p.at("logits"));
    if (p.contains("layer_outputs"))
      for (const auto& e : p.at("layer_outputs")) rp.layer_outputs.push_back(slice(blob, e));
    ref.prompts.push_back(std::move(rp));
  }
  return ref;
}

double rel_l2(const float* a, const float* b, size_t count) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < count; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    diff += d * d;
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace flashdraft::model::testing
