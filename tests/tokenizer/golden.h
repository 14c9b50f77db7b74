#pragma once
// Reads the committed Hugging Face golden files (tools/gen_tokenizer_golden.py).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace flashdraft::tokenizer::testing {

struct GoldenCase {
  std::string text;
  std::vector<int32_t> ids;            // specials parsed
  std::vector<int32_t> ids_nospecial;  // specials as plain text
  std::string decode;                  // decode(ids)
  std::string decode_skip;             // decode(ids, skip_special)
  std::string nfc;                     // normalizer output
};

struct GoldenDecode {
  std::vector<int32_t> ids;
  std::string decode;
  std::string decode_skip;
};

std::filesystem::path fixture_dir();            // tests/fixtures/tokenizer
std::filesystem::path qwen3_tokenizer_dir();    // filled by the ctest fixture
std::vector<GoldenCase> load_golden_cases();    // corpus.jsonl + golden.jsonl
std::vector<GoldenDecode> load_golden_decodes();

std::string utf8_of(uint32_t code_point);
// First index where a and b differ (or the shorter size).
size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b);
// `text` shortened and escaped for failure messages.
std::string preview(const std::string& text);

}  // namespace flashdraft::tokenizer::testing
