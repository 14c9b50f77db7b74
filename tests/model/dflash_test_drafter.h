#pragma once
// Small random DFlash drafters over the tiny-qwen3 fixture target (hidden 64,
// 3 layers, vocab 512), written as real drafter directories, plus a naive
// double-precision forward of DFLASH.md section 3 to check the engine's
// drafter against.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/checkpoint.h"

namespace flashdraft::model::testing {

// config.json of a 2-layer drafter (sliding window 4, then full), taps [0, 2],
// block size 8, mask id 500, over tiny-qwen3.
nlohmann::json tiny_drafter_config();

using Tensors = std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>;

// Random weights (normal, fixed seed) for `config`, under checkpoint names.
Tensors random_drafter_weights(const nlohmann::json& config, uint32_t seed);

// Writes config.json + model.safetensors (f32) into dir (created).
void write_drafter(const std::filesystem::path& dir, const nlohmann::json& config, const Tensors& weights);

// DFLASH.md section 3 in double, contiguous: context taps [S, K * Ht] at
// positions 0..S-1, block [anchor, mask x (B-1)] at p0 = S. Returns logits
// [B-1, vocab]. embed / lm_head: the target's [vocab, H] tables.
std::vector<double> naive_draft(const nlohmann::json& config, const io::Checkpoint& drafter,
                                const std::vector<float>& embed, const std::vector<float>& lm_head,
                                const std::vector<float>& taps, int64_t S, int32_t anchor, int64_t B);

// A fresh directory under the system temp dir, removed on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace flashdraft::model::testing
