#include "synthetic.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "tokenizer/byte_level.h"

namespace flashdraft::tokenizer::testing {
namespace {

std::string text_of(const std::string& raw) {
  std::string t;
  for (unsigned char b : raw) t += byte_level::byte_to_text(b);
  return t;
}

}  // namespace

nlohmann::json synthetic_tokenizer_json() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::byte_to_text(static_cast<uint8_t>(b))] = b;
  // Listed in rank order. "bc" outranks "ab" so that rank, not position, decides "abc".
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}, {"o", "r"}, {"b", "c"}, {"a", "b"},
      {"a", "a"}, {"aa", "aa"}};
  nlohmann::json merges_json = nlohmann::json::array();
  int32_t id = 256;
  for (const auto& [l, r] : merges) {
    vocab[text_of(l + r)] = id++;
    // Both spellings Hugging Face has used for merges.
    if (id % 2) merges_json.push_back(nlohmann::json::array({text_of(l), text_of(r)}));
    else merges_json.push_back(text_of(l) + " " + text_of(r));
  }
  auto added = [](int32_t i, const std::string& content, bool special, bool normalized) {
    return nlohmann::json{{"id", i}, {"content", content}, {"single_word", false}, {"lstrip", false},
                          {"rstrip", false}, {"normalized", normalized}, {"special", special}};
  };
  nlohmann::json root;
  root["version"] = "1.0";
  root["truncation"] = nullptr;
  root["padding"] = nullptr;
  root["added_tokens"] = {added(kEnd, "<|end|>", true, false), added(kEPrefix, "<|e", false, false),
                          added(kThink, "<think>", false, false), added(kEAcute, "\xC3\xA9", false, true)};
  root["normalizer"] = {{"type", "NFC"}};
  root["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern",
          {{"Regex",
            R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
  root["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  root["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  root["model"] = {{"type", "BPE"},          {"dropout", nullptr},   {"unk_token", nullptr},
                   {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
                   {"byte_fallback", false}, {"ignore_merges", false}, {"vocab", vocab},
                   {"merges", merges_json}};
  return root;
}

nlohmann::json synthetic_config_json() {
  return {{"add_bos_token", false},
          {"bos_token", nullptr},
          {"eos_token", {{"content", "<|end|>"}, {"lstrip", false}}},
          {"pad_token", "<|end|>"},
          {"chat_template", "{{ messages }}"}};
}

TempDir::TempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  path_ = std::filesystem::temp_directory_path() /
          ("fd_tok_" + std::to_string(::getpid()) + "_" + (info ? std::string(info->name()) : "x"));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void TempDir::write(const std::string& name, const std::string& text) const {
  std::ofstream out(path_ / name, std::ios::binary);
  out << text;
}

}  // namespace flashdraft::tokenizer::testing
