#include <gtest/gtest.h>

#include "core/error.h"
#include "synthetic.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::tokenizer {
namespace {

using namespace testing;

Tokenizer synthetic() {
  TempDir dir;
  dir.write_json("tokenizer.json", synthetic_tokenizer_json());
  dir.write_json("tokenizer_config.json", synthetic_config_json());
  return Tokenizer::load(dir.path());
}

TEST(IncrementalDecoder, HoldsBytesUntilTheCharacterIsComplete) {
  const Tokenizer t = synthetic();
  IncrementalDecoder dec(t);
  EXPECT_EQ(dec.push('a'), "a");
  EXPECT_EQ(dec.push(0xF0), "");  // U+1F600 arrives one byte token at a time
  EXPECT_EQ(dec.push(0x9F), "");
  EXPECT_EQ(dec.push(0x98), "");
  EXPECT_EQ(dec.push(0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(dec.push(kHello), "hello");
  EXPECT_EQ(dec.flush(), "");
}

TEST(IncrementalDecoder, InvalidBytesBecomeReplacementCharacters) {
  const Tokenizer t = synthetic();
  IncrementalDecoder dec(t);
  EXPECT_EQ(dec.push(0xFF), "\xEF\xBF\xBD");  // can never start a character
  EXPECT_EQ(dec.push(0xC3), "");
  EXPECT_EQ(dec.push('x'), "\xEF\xBF\xBDx");  // the held byte turned out invalid
  EXPECT_EQ(dec.push(0xE4), "");
  EXPECT_EQ(dec.flush(), "\xEF\xBF\xBD");  // incomplete at the end
  EXPECT_EQ(dec.flush(), "");
}

TEST(IncrementalDecoder, SpecialTokensAreSkippedUnlessAsked) {
  const Tokenizer t = synthetic();
  IncrementalDecoder skip(t);
  EXPECT_EQ(skip.push(kEnd), "");
  EXPECT_EQ(skip.push(kThink), "<think>");
  IncrementalDecoder keep(t, /*skip_special=*/false);
  EXPECT_EQ(keep.push(kEnd), "<|end|>");
}

TEST(IncrementalDecoder, UnknownIdIsAnError) {
  const Tokenizer t = synthetic();
  IncrementalDecoder dec(t);
  EXPECT_THROW(dec.push(270), Error);
  EXPECT_THROW(dec.push(1 << 30), Error);
}

}  // namespace
}  // namespace flashdraft::tokenizer
