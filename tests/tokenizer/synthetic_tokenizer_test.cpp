// Behaviour on a tokenizer small enough that every expected id is worked out
// by hand (see synthetic.h for the vocabulary and merge ranks).
#include <gtest/gtest.h>

#include "core/error.h"
#include "synthetic.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::tokenizer {
namespace {

using namespace testing;
using Ids = std::vector<int32_t>;

Tokenizer load_synthetic(const nlohmann::json& tok = synthetic_tokenizer_json(),
                         const nlohmann::json& cfg = synthetic_config_json()) {
  TempDir dir;
  dir.write_json("tokenizer.json", tok);
  dir.write_json("tokenizer_config.json", cfg);
  return Tokenizer::load(dir.path());
}

TEST(SyntheticTokenizer, MergesApplyByRank) {
  const Tokenizer t = load_synthetic();
  EXPECT_EQ(t.encode("hello world"), (Ids{kHello, kSpaceW, kOr, 'l', 'd'}));
  // "bc" has the better rank although "ab" comes first in the word.
  EXPECT_EQ(t.encode("abc"), (Ids{'a', kBc}));
  EXPECT_EQ(t.encode(""), Ids{});
}

TEST(SyntheticTokenizer, LongWordsMergeLikeShortOnes) {
  // 12 symbols take the rescanning path, 60+ the heap path; both must merge
  // the leftmost of equal-rank pairs first.
  const Tokenizer t = load_synthetic();
  EXPECT_EQ(t.encode(std::string(12, 'a')), Ids(3, kAaaa));
  EXPECT_EQ(t.encode(std::string(60, 'a')), Ids(15, kAaaa));
  Ids odd(15, kAaaa);
  odd.push_back('a');
  EXPECT_EQ(t.encode(std::string(61, 'a')), odd);
  Ids even(15, kAaaa);
  even.push_back(kAa);
  EXPECT_EQ(t.encode(std::string(62, 'a')), even);
}

TEST(SyntheticTokenizer, AddedTokensUseLeftmostLongestMatch) {
  const Tokenizer t = load_synthetic();
  EXPECT_EQ(t.encode("x<|end|>y"), (Ids{'x', kEnd, 'y'}));
  EXPECT_EQ(t.encode("<|en"), (Ids{kEPrefix, 'n'}));
  EXPECT_EQ(t.encode("<think><|end|>"), (Ids{kThink, kEnd}));
}

TEST(SyntheticTokenizer, ParseSpecialOffEncodesSpecialsAsText) {
  const Tokenizer t = load_synthetic();
  EXPECT_EQ(t.encode("<|end|>", false), (Ids{'<', '|', 'e', 'n', 'd', '|', '>'}));
  // The special's bytes stay consumed: the shorter "<|e" is not found inside.
  EXPECT_EQ(t.encode("a<|end|>", false), (Ids{'a', '<', '|', 'e', 'n', 'd', '|', '>'}));
  // Non-special added tokens are still recognised.
  EXPECT_EQ(t.encode("<think>", false), Ids{kThink});
}

TEST(SyntheticTokenizer, NormalizedAddedTokensMatchAfterNfc) {
  const Tokenizer t = load_synthetic();
  EXPECT_EQ(t.encode("e\xCC\x81"), Ids{kEAcute});  // e + U+0301 composes to U+00E9
  EXPECT_EQ(t.encode("caf\xC3\xA9"), (Ids{'c', 'a', 'f', kEAcute}));
  // Hugging Face's ByteLevel decoder also maps added tokens: "é" is in the
  // byte alphabet (byte 0xE9), so alone it decodes to U+FFFD there too.
  EXPECT_EQ(t.decode(t.encode("cafe\xCC\x81")), "caf\xEF\xBF\xBD");
}

TEST(SyntheticTokenizer, DecodeAndSkipSpecial) {
  const Tokenizer t = load_synthetic();
  EXPECT_EQ(t.decode(Ids{kHello, kSpaceW, kOr, 'l', 'd'}), "hello world");
  EXPECT_EQ(t.decode(Ids{kEnd, 'x'}), "<|end|>x");
  EXPECT_EQ(t.decode(Ids{kEnd, 'x'}, true), "x");
  EXPECT_EQ(t.decode(Ids{kThink}, true), "<think>");  // not special: kept
  EXPECT_EQ(t.decode(Ids{0xC3}), "\xEF\xBF\xBD");        // half a character
  EXPECT_THROW(t.decode(Ids{270}), Error);               // no token has id 270
  EXPECT_THROW(t.decode(Ids{-1}), Error);
}

TEST(SyntheticTokenizer, VocabularyLookups) {
  const Tokenizer t = load_synthetic();
  EXPECT_EQ(t.vocab_size(), kEAcute + 1);
  EXPECT_EQ(t.token_to_id("<|end|>"), kEnd);
  EXPECT_EQ(t.token_to_id("\xC4\xA0w"), kSpaceW);  // "Ġw"
  EXPECT_EQ(t.token_to_id("nope"), std::nullopt);
  EXPECT_EQ(t.id_to_token(kSpaceW), "\xC4\xA0w");
  EXPECT_EQ(t.id_to_token(kThink), "<think>");
  EXPECT_TRUE(t.is_special(kEnd));
  EXPECT_FALSE(t.is_special(kThink));
  EXPECT_FALSE(t.is_special(99999));
  EXPECT_THROW(t.id_to_token(99999), Error);
}

TEST(SyntheticTokenizer, ConfigFields) {
  const Tokenizer t = load_synthetic();
  EXPECT_EQ(t.eos_token(), std::optional<std::string>("<|end|>"));  // from {"content": ...}
  EXPECT_EQ(t.eos_token_id(), kEnd);
  EXPECT_EQ(t.pad_token_id(), kEnd);
  EXPECT_FALSE(t.bos_token().has_value());
  EXPECT_FALSE(t.bos_token_id().has_value());
  EXPECT_FALSE(t.add_bos_token());
  EXPECT_EQ(t.chat_template(), "{{ messages }}");
}

TEST(SyntheticTokenizer, ChatTemplateListAndJinjaFile) {
  auto cfg = synthetic_config_json();
  cfg["chat_template"] = {{{"name", "tool_use"}, {"template", "B"}}, {{"name", "default"}, {"template", "A"}}};
  EXPECT_EQ(load_synthetic(synthetic_tokenizer_json(), cfg).chat_template(), "A");

  cfg.erase("chat_template");
  TempDir dir;
  dir.write_json("tokenizer.json", synthetic_tokenizer_json());
  dir.write_json("tokenizer_config.json", cfg);
  EXPECT_EQ(Tokenizer::load(dir.path()).chat_template(), "");
  dir.write("chat_template.jinja", "{% for m in messages %}{{ m }}{% endfor %}");
  EXPECT_EQ(Tokenizer::load(dir.path()).chat_template(), "{% for m in messages %}{{ m }}{% endfor %}");
}

TEST(SyntheticTokenizer, IgnoreMergesLooksUpWholeWordsFirst) {
  auto tok = synthetic_tokenizer_json();
  tok["model"]["vocab"]["abc"] = 280;
  EXPECT_EQ(load_synthetic(tok).encode("abc"), (Ids{'a', kBc}));
  tok["model"]["ignore_merges"] = true;
  EXPECT_EQ(load_synthetic(tok).encode("abc"), Ids{280});
}

TEST(SyntheticTokenizer, ByteLevelWithItsOwnRegex) {
  auto tok = synthetic_tokenizer_json();
  tok["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  EXPECT_EQ(load_synthetic(tok).encode("hello world"), (Ids{kHello, kSpaceW, kOr, 'l', 'd'}));
}

TEST(SyntheticTokenizer, InvalidUtf8InputIsAnError) {
  const Tokenizer t = load_synthetic();
  try {
    t.encode("ok\xFF");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("offset 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flashdraft::tokenizer
