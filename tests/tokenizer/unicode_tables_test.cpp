// Code-point-wide checks against Hugging Face: the split regex (PCRE2 here,
// Oniguruma there) must class every character alike, and NFC must agree.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "golden.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"

namespace flashdraft::tokenizer {
namespace {

using namespace testing;

bool is_surrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// Must stay identical to split_probe() in tools/gen_tokenizer_golden.py.
std::string split_probe(uint32_t cp) {
  const std::string c = utf8_of(cp);
  return "x" + c + "1'" + c + " " + c + c + "x\n" + c + "\t.";
}

std::string qwen3_split_pattern() {
  std::ifstream in(qwen3_tokenizer_dir() / "tokenizer.json");
  const auto root = nlohmann::json::parse(in);
  return root["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>();
}

// True when PCRE2's Unicode tables (older than the Oniguruma build inside
// `tokenizers`) do not know the code point at all.
bool unassigned_in_pcre2(const RegexSplitter& cn, uint32_t cp) {
  const std::string twice = utf8_of(cp) + utf8_of(cp);
  std::vector<std::string_view> words;
  cn.split(twice, words);
  return words.size() == 2;  // two matches; an unmatched gap would be one word
}

TEST(UnicodeTables, SplitClassesEveryCodePointLikeHuggingFace) {
  RegexSplitter splitter(qwen3_split_pattern(), false, "qwen3 split");
  RegexSplitter cn("\\p{Cn}", false, "unassigned");
  std::ifstream in(fixture_dir() / "unicode_split.txt");
  ASSERT_TRUE(in) << "missing unicode_split.txt";
  std::string line;
  uint32_t expected_next = 0;
  size_t checked = 0, failures = 0, newer_unicode = 0;
  std::vector<std::string_view> words;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string first_hex, last_hex, signature;
    fields >> first_hex >> last_hex >> signature;
    const auto first = static_cast<uint32_t>(std::stoul(first_hex, nullptr, 16));
    const auto last = static_cast<uint32_t>(std::stoul(last_hex, nullptr, 16));
    ASSERT_EQ(first, expected_next) << "unicode_split.txt has a gap";
    for (uint32_t cp = first; cp <= last; ++cp) {
      if (is_surrogate(cp)) continue;
      const std::string probe = split_probe(cp);
      words.clear();
      splitter.split(probe, words);
      std::string ours;
      for (auto w : words) {
        if (!ours.empty()) ours += ',';
        ours += std::to_string(w.size());
      }
      ++checked;
      if (ours == signature) continue;
      // Characters encoded after PCRE2's Unicode version are unknown to it,
      // so it cannot class them as letters or digits: a known, counted gap.
      if (unassigned_in_pcre2(cn, cp)) {
        ++newer_unicode;
        continue;
      }
      if (++failures <= 20)
        ADD_FAILURE() << "U+" << std::hex << cp << ": word lengths " << ours << ", Hugging Face " << signature;
    }
    expected_next = last + 1;
  }
  EXPECT_EQ(expected_next, 0x110000u);
  EXPECT_EQ(checked, 0x110000u - 0x800u);
  EXPECT_EQ(failures, 0u);
  // Today about 9,400 (Unicode 15-16 additions); far more would mean the
  // tolerance hides a real difference.
  EXPECT_LT(newer_unicode, 20000u);
  std::cout << "[ INFO     ] " << newer_unicode
            << " code points differ only because PCRE2's Unicode tables predate them\n";
}

TEST(UnicodeTables, NfcAgreesWithHuggingFaceForEveryCodePoint) {
  std::ifstream in(fixture_dir() / "unicode_nfc.txt");
  ASSERT_TRUE(in) << "missing unicode_nfc.txt";
  std::unordered_map<uint32_t, std::string> changed;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string hex;
    fields >> hex;
    const auto cp = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
    std::string nfc;
    while (fields >> hex) nfc += utf8_of(static_cast<uint32_t>(std::stoul(hex, nullptr, 16)));
    changed[cp] = nfc;
  }
  ASSERT_GT(changed.size(), 1000u);
  size_t failures = 0;
  for (uint32_t cp = 0; cp < 0x110000; ++cp) {
    if (is_surrogate(cp)) continue;
    const std::string c = utf8_of(cp);
    const auto it = changed.find(cp);
    const std::string& expected = it == changed.end() ? c : it->second;
    if (normalize(Normalization::kNfc, c) != expected && ++failures <= 20)
      ADD_FAILURE() << "NFC of U+" << std::hex << cp << " differs from Hugging Face";
  }
  EXPECT_EQ(failures, 0u);
}

}  // namespace
}  // namespace flashdraft::tokenizer
