// Parity with Hugging Face `tokenizers` on the real Qwen3 tokenizer, over the
// committed corpus (tests/fixtures/tokenizer, tools/gen_tokenizer_golden.py).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace flashdraft::tokenizer {
namespace {

using namespace testing;

class Qwen3Parity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::load(qwen3_tokenizer_dir()));
    cases_ = std::make_unique<std::vector<GoldenCase>>(load_golden_cases());
  }
  static void TearDownTestSuite() {
    tokenizer_.reset();
    cases_.reset();
  }
  static const Tokenizer& tok() { return *tokenizer_; }
  static const std::vector<GoldenCase>& cases() { return *cases_; }

  static inline std::unique_ptr<Tokenizer> tokenizer_;
  static inline std::unique_ptr<std::vector<GoldenCase>> cases_;
};

TEST_F(Qwen3Parity, CorpusIsLargeEnough) { EXPECT_GE(cases().size(), 300u); }

TEST_F(Qwen3Parity, EncodeMatchesHuggingFace) {
  size_t failures = 0;
  for (size_t i = 0; i < cases().size(); ++i) {
    const auto& c = cases()[i];
    const auto ids = tok().encode(c.text);
    if (ids != c.ids && ++failures <= 10)
      ADD_FAILURE() << "corpus line " << i + 1 << " " << preview(c.text) << ": first difference at token "
                    << first_difference(ids, c.ids) << " of " << c.ids.size();
  }
  EXPECT_EQ(failures, 0u);
}

TEST_F(Qwen3Parity, EncodeWithSpecialsAsTextMatchesHuggingFace) {
  size_t failures = 0, differing = 0;
  for (size_t i = 0; i < cases().size(); ++i) {
    const auto& c = cases()[i];
    const auto ids = tok().encode(c.text, /*parse_special=*/false);
    differing += c.ids_nospecial != c.ids;
    if (ids != c.ids_nospecial && ++failures <= 10)
      ADD_FAILURE() << "corpus line " << i + 1 << " " << preview(c.text) << ": first difference at token "
                    << first_difference(ids, c.ids_nospecial);
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GE(differing, 10u) << "the corpus should hold special tokens inside text";
}

TEST_F(Qwen3Parity, DecodeMatchesHuggingFace) {
  for (size_t i = 0; i < cases().size(); ++i) {
    const auto& c = cases()[i];
    EXPECT_EQ(tok().decode(c.ids), c.decode) << "corpus line " << i + 1;
    EXPECT_EQ(tok().decode(c.ids, /*skip_special=*/true), c.decode_skip) << "corpus line " << i + 1;
  }
}

TEST_F(Qwen3Parity, DecodeOfEncodeIsNfcOfInput) {
  size_t changed_by_nfc = 0;
  for (size_t i = 0; i < cases().size(); ++i) {
    const auto& c = cases()[i];
    changed_by_nfc += c.nfc != c.text;
    EXPECT_EQ(normalize(Normalization::kNfc, c.text), c.nfc) << "corpus line " << i + 1;
    EXPECT_EQ(tok().decode(tok().encode(c.text)), c.nfc) << "corpus line " << i + 1;
    EXPECT_EQ(tok().decode(tok().encode(c.text, false)), c.nfc) << "corpus line " << i + 1;
  }
  EXPECT_GE(changed_by_nfc, 5u) << "the corpus should hold non-NFC input";
}

TEST_F(Qwen3Parity, DecodeOfArbitraryIdsMatchesHuggingFace) {
  // Random id sequences cut UTF-8 characters apart: this checks the U+FFFD
  // substitution, not only well-formed text.
  const auto decodes = load_golden_decodes();
  ASSERT_GE(decodes.size(), 100u);
  size_t with_replacement = 0;
  for (size_t i = 0; i < decodes.size(); ++i) {
    const auto& d = decodes[i];
    with_replacement += d.decode.find("\xEF\xBF\xBD") != std::string::npos;
    EXPECT_EQ(tok().decode(d.ids), d.decode) << "golden_decode line " << i + 1;
    EXPECT_EQ(tok().decode(d.ids, true), d.decode_skip) << "golden_decode line " << i + 1;
  }
  EXPECT_GE(with_replacement, 10u);
}

// Feeds ids one at a time and checks every chunk is whole UTF-8 and that the
// chunks add up to decode(ids).
void expect_incremental_matches(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special,
                                const std::string& where) {
  IncrementalDecoder dec(tok, skip_special);
  std::string all;
  for (int32_t id : ids) {
    const std::string chunk = dec.push(id);
    ASSERT_EQ(utf8::find_invalid(chunk), std::string::npos) << where << ": chunk splits a UTF-8 character";
    all += chunk;
  }
  const std::string tail = dec.flush();
  ASSERT_EQ(utf8::find_invalid(tail), std::string::npos) << where;
  all += tail;
  EXPECT_EQ(all, tok.decode(ids, skip_special)) << where;
}

TEST_F(Qwen3Parity, IncrementalDecoderMatchesDecodeOnCorpus) {
  for (size_t i = 0; i < cases().size(); ++i) {
    expect_incremental_matches(tok(), cases()[i].ids, true, "corpus line " + std::to_string(i + 1));
    expect_incremental_matches(tok(), cases()[i].ids, false, "corpus line " + std::to_string(i + 1));
  }
  for (const auto& d : load_golden_decodes()) expect_incremental_matches(tok(), d.ids, true, "golden_decode");
}

TEST_F(Qwen3Parity, IncrementalDecoderHoldsBackPartialCharacters) {
  // Emoji and rare CJK are split over several byte-level tokens; at least one
  // push must then return nothing while the character is incomplete.
  for (const std::string text : {"👨‍👩‍👧‍👦", "𠀀𪚥", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"}) {
    const auto ids = tok().encode(text);
    IncrementalDecoder dec(tok());
    size_t empty_pushes = 0;
    std::string all;
    for (int32_t id : ids) {
      const std::string chunk = dec.push(id);
      empty_pushes += chunk.empty();
      ASSERT_EQ(utf8::find_invalid(chunk), std::string::npos);
      all += chunk;
    }
    all += dec.flush();
    EXPECT_EQ(all, text);
    EXPECT_GT(empty_pushes, 0u) << preview(text) << " was expected to need byte-level pieces";
  }
}

TEST_F(Qwen3Parity, SpecialTokenMetadataComesFromTheFiles) {
  std::ifstream in(qwen3_tokenizer_dir() / "tokenizer.json");
  const auto root = nlohmann::json::parse(in);
  int32_t max_id = 0;
  for (const auto& [token, id] : root["model"]["vocab"].items()) max_id = std::max(max_id, id.get<int32_t>());
  for (const auto& t : root["added_tokens"]) {
    const auto id = t["id"].get<int32_t>();
    max_id = std::max(max_id, id);
    EXPECT_EQ(tok().is_special(id), t["special"].get<bool>()) << t["content"];
    EXPECT_EQ(tok().token_to_id(t["content"].get<std::string>()), id);
    EXPECT_EQ(tok().id_to_token(id), t["content"].get<std::string>());
    EXPECT_EQ(tok().encode(t["content"].get<std::string>()), std::vector<int32_t>{id});
  }
  EXPECT_EQ(tok().vocab_size(), max_id + 1);

  std::ifstream cin(qwen3_tokenizer_dir() / "tokenizer_config.json");
  const auto cfg = nlohmann::json::parse(cin);
  EXPECT_EQ(tok().chat_template(), cfg["chat_template"].get<std::string>());
  ASSERT_TRUE(tok().eos_token().has_value());
  EXPECT_EQ(*tok().eos_token(), cfg["eos_token"].get<std::string>());
  EXPECT_EQ(tok().eos_token_id(), tok().token_to_id(cfg["eos_token"].get<std::string>()));
  EXPECT_TRUE(tok().eos_token_id().has_value());
  EXPECT_EQ(tok().bos_token().has_value(), !cfg["bos_token"].is_null());
  EXPECT_EQ(tok().add_bos_token(), cfg["add_bos_token"].get<bool>());
}

TEST_F(Qwen3Parity, CopiesShareTablesAndBehaveAlike) {
  Tokenizer copy = tok();
  Tokenizer moved = std::move(copy);
  for (size_t i = 0; i < cases().size(); i += 7) EXPECT_EQ(moved.encode(cases()[i].text), cases()[i].ids);
}

TEST_F(Qwen3Parity, ColdAndWarmCacheGiveTheSameIds) {
  for (size_t i = 0; i < cases().size(); i += 3) {
    tok().clear_cache();
    const auto cold = tok().encode(cases()[i].text);
    EXPECT_EQ(tok().encode(cases()[i].text), cold);
    EXPECT_EQ(cold, cases()[i].ids);
  }
}

TEST_F(Qwen3Parity, ConcurrentEncodesShareTheCacheSafely) {
  tok().clear_cache();
  std::atomic<size_t> mismatches{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      // Different starting points so threads fill and read the cache at once.
      for (size_t k = 0; k < cases().size(); ++k) {
        const auto& c = cases()[(k + static_cast<size_t>(w) * 97) % cases().size()];
        if (tok().encode(c.text) != c.ids) ++mismatches;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0u);
}

}  // namespace
}  // namespace flashdraft::tokenizer
