#pragma once
// generation_config.json: the model author's default sampling settings.
// Every field is optional; a missing file means "no defaults given".
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace flashdraft::io {

struct GenerationConfig {
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k, max_new_tokens;
  std::optional<bool> do_sample;
  std::vector<int64_t> eos_token_ids;  // the file may give an int or a list
  std::optional<int64_t> bos_token_id, pad_token_id;
};

// Reads dir/generation_config.json; all-empty when the file does not exist.
// A present but malformed file (bad JSON, wrong field type) is an error
// naming the file and field.
GenerationConfig load_generation_config(const std::filesystem::path& dir);
GenerationConfig parse_generation_config(const std::string& text, const std::string& source);

}  // namespace flashdraft::io
