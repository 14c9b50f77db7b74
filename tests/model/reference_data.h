#pragma once
// Reads the Hugging Face reference written by tools/make_tiny_qwen3.py:
// reference.json (prompts, greedy continuations, where each array lives in
// reference.bin) + reference.bin (raw little-endian float32).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace flashdraft::model::testing {

struct RefArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

struct RefPrompt {
  std::vector<int32_t> ids;
  RefArray logits;                    // [n, vocab]
  std::vector<int32_t> greedy;        // argmax continuation, recomputed from scratch each step
  std::vector<RefArray> layer_outputs;  // [n, hidden] per decoder layer; only on some prompts
};

struct Reference {
  std::vector<RefPrompt> prompts;
  std::vector<float> inv_freq;
};

Reference load_reference(const std::filesystem::path& model_dir);

// ||a - b||_2 / ||b||_2 over `count` floats.
double rel_l2(const float* a, const float* b, size_t count);

std::filesystem::path fixture(const std::string& name);

}  // namespace flashdraft::model::testing
