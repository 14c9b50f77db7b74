#include "cli/text_stream.h"

#include <gtest/gtest.h>

namespace flashdraft::cli {
namespace {

tokenizer::Tokenizer tiny() { return tokenizer::Tokenizer::load(FD_FIXTURES_DIR "/cli/tiny-tokenizer"); }

bool is_complete_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += len;
  }
  return true;
}

struct Collected {
  std::vector<std::string> pieces;
  std::string all() const {
    std::string s;
    for (const auto& p : pieces) s += p;
    return s;
  }
  TextStream::Writer writer() {
    return [this](std::string_view p) { pieces.emplace_back(p); };
  }
};

TEST(TextStream, StreamsExactTextInWholeCharacters) {
  auto tok = tiny();
  const std::string text = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe2\x9c\x93 \xf0\x9f\x98\x80 the end";
  auto ids = tok.encode(text);
  ASSERT_GT(ids.size(), 10u);
  Collected c;
  TextStream stream(tok, {}, c.writer());
  for (int32_t id : ids) ASSERT_TRUE(stream.push(id));
  stream.finish();
  EXPECT_EQ(c.all(), text);
  EXPECT_EQ(stream.text(), text);
  for (const auto& p : c.pieces) EXPECT_TRUE(is_complete_utf8(p)) << "piece splits a character";
  // Byte-level tokens split the multi-byte characters, so some pushes emit nothing.
  EXPECT_LT(c.pieces.size(), ids.size());
}

TEST(TextStream, NeverWritesAnyPartOfAStopString) {
  auto tok = tiny();
  const std::string text = "alpha beta END gamma delta";
  auto ids = tok.encode(text);
  Collected c;
  TextStream stream(tok, {"END"}, c.writer());
  size_t pushed = 0;
  for (int32_t id : ids) {
    ++pushed;
    if (!stream.push(id)) break;
  }
  stream.finish();
  EXPECT_EQ(c.all(), "alpha beta ");
  EXPECT_TRUE(stream.matcher().stopped());
  // It stopped on the token that completed "END", not later.
  EXPECT_NE(tok.decode(std::span<const int32_t>(ids.data(), pushed)).find("END"), std::string::npos);
  EXPECT_EQ(tok.decode(std::span<const int32_t>(ids.data(), pushed - 1)).find("END"), std::string::npos);
}

TEST(TextStream, HeldBackPrefixIsReleasedAtTheEnd) {
  auto tok = tiny();
  auto ids = tok.encode("to be continued EN");
  Collected c;
  TextStream stream(tok, {"END"}, c.writer());
  for (int32_t id : ids) ASSERT_TRUE(stream.push(id));
  EXPECT_EQ(c.all(), "to be continued ");
  stream.finish();
  EXPECT_EQ(c.all(), "to be continued EN");
}

TEST(TextStream, LeavesOutSpecialTokensButKeepsOtherAddedTokens) {
  auto tok = tiny();
  auto ids = tok.encode("<|im_start|>assistant\n<think>\nhi</think>", /*parse_special=*/true);
  ASSERT_EQ(ids.front(), *tok.token_to_id("<|im_start|>"));
  Collected c;
  TextStream stream(tok, {}, c.writer());
  for (int32_t id : ids) stream.push(id);
  stream.finish();
  EXPECT_EQ(c.all(), "assistant\n<think>\nhi</think>");
}

}  // namespace
}  // namespace flashdraft::cli

namespace flashdraft::cli {
namespace {

TEST(TextStream, IdsPastTheTokenizerVocabularyAddNoText) {
  auto tok = tiny();
  std::string out;
  TextStream stream(tok, {}, [&](std::string_view p) { out += p; });
  auto ids = tok.encode("ab");
  EXPECT_TRUE(stream.push(ids[0]));
  EXPECT_TRUE(stream.push(tok.vocab_size() + 3));  // a padded embedding row
  for (size_t i = 1; i < ids.size(); ++i) stream.push(ids[i]);
  stream.finish();
  EXPECT_EQ(out, "ab");
}

}  // namespace
}  // namespace flashdraft::cli
