#pragma once
// A small tokenizer.json written by the tests: the 256 byte tokens (id ==
// byte value), a handful of merges and added tokens, Qwen's normalizer and
// pre-tokenizer. Small enough to reason about every expected id by hand.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace flashdraft::tokenizer::testing {

// Ids of the merged tokens and added tokens in synthetic_tokenizer_json().
enum SyntheticId : int32_t {
  kHe = 256, kLl, kHell, kHello, kSpaceW, kOr, kBc, kAb, kAa, kAaaa,
  kEnd = 300,     // "<|end|>", special
  kEPrefix,       // "<|e", not special: shorter overlapping match
  kThink,         // "<think>", not special
  kEAcute,        // "é", not special, matched after NFC
};

nlohmann::json synthetic_tokenizer_json();
nlohmann::json synthetic_config_json();

// A fresh directory for one test, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const;
  void write_json(const std::string& name, const nlohmann::json& j) const { write(name, j.dump()); }

 private:
  std::filesystem::path path_;
};

}  // namespace flashdraft::tokenizer::testing
