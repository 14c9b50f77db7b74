// Malformed or unsupported tokenizer files fail at load with the file and
// field named.
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "synthetic.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::tokenizer {
namespace {

using namespace testing;
using nlohmann::json;

// Loads the synthetic tokenizer after `edit` and returns the error message.
std::string load_error(const std::function<void(json& tok, json& cfg)>& edit) {
  json tok = synthetic_tokenizer_json();
  json cfg = synthetic_config_json();
  edit(tok, cfg);
  TempDir dir;
  dir.write_json("tokenizer.json", tok);
  dir.write_json("tokenizer_config.json", cfg);
  try {
    Tokenizer::load(dir.path());
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_mentions(const std::string& message, std::initializer_list<std::string> parts) {
  for (const auto& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "\"" << p << "\" not in: " << message;
}

TEST(TokenizerErrors, SyntheticFilesLoad) { EXPECT_EQ(load_error([](json&, json&) {}), "(no error)"); }

TEST(TokenizerErrors, MissingModel) {
  expect_mentions(load_error([](json& t, json&) { t.erase("model"); }), {"tokenizer.json", "\"model\"", "missing"});
}

TEST(TokenizerErrors, UnknownModelType) {
  expect_mentions(load_error([](json& t, json&) { t["model"]["type"] = "WordPiece"; }),
                  {"tokenizer.json", "model.type", "WordPiece", "BPE"});
}

TEST(TokenizerErrors, MergeWithUnknownToken) {
  expect_mentions(load_error([](json& t, json&) { t["model"]["merges"][0] = "zz qq"; }),
                  {"tokenizer.json", "model.merges[0]", "zz"});
}

TEST(TokenizerErrors, UnsupportedNormalizer) {
  expect_mentions(load_error([](json& t, json&) { t["normalizer"] = {{"type", "NFKC"}}; }),
                  {"tokenizer.json", "normalizer.type", "NFKC"});
}

TEST(TokenizerErrors, UnsupportedSplitBehaviour) {
  expect_mentions(
      load_error([](json& t, json&) { t["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; }),
      {"tokenizer.json", "pre_tokenizer.pretokenizers[0].behavior", "Removed"});
}

TEST(TokenizerErrors, RegexThatDoesNotCompile) {
  expect_mentions(
      load_error([](json& t, json&) { t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(abc"; }),
      {"tokenizer.json", "pre_tokenizer.pretokenizers[0].pattern.Regex", "does not compile"});
}

TEST(TokenizerErrors, MissingByteLevelStep) {
  expect_mentions(load_error([](json& t, json&) { t["pre_tokenizer"]["pretokenizers"].erase(1); }),
                  {"tokenizer.json", "pre_tokenizer.pretokenizers[0].type", "ByteLevel"});
}

TEST(TokenizerErrors, UnsupportedDecoder) {
  expect_mentions(load_error([](json& t, json&) { t["decoder"] = {{"type", "WordPiece"}}; }),
                  {"tokenizer.json", "decoder.type", "WordPiece"});
}

TEST(TokenizerErrors, AddedTokenStripFlags) {
  expect_mentions(load_error([](json& t, json&) { t["added_tokens"][1]["lstrip"] = true; }),
                  {"tokenizer.json", "added_tokens[1].lstrip"});
}

TEST(TokenizerErrors, BadEosTokenInConfig) {
  expect_mentions(load_error([](json&, json& c) { c["eos_token"] = 5; }), {"tokenizer_config.json", "eos_token"});
}

TEST(TokenizerErrors, MissingAndUnparsableFiles) {
  TempDir dir;
  try {
    Tokenizer::load(dir.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    expect_mentions(e.what(), {(dir.path() / "tokenizer.json").string(), "cannot open"});
  }
  dir.write("tokenizer.json", "{ not json");
  try {
    Tokenizer::load(dir.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    expect_mentions(e.what(), {"tokenizer.json", "not valid JSON"});
  }
  dir.write_json("tokenizer.json", synthetic_tokenizer_json());
  try {
    Tokenizer::load(dir.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    expect_mentions(e.what(), {"tokenizer_config.json", "cannot open"});
  }
}

}  // namespace
}  // namespace flashdraft::tokenizer
