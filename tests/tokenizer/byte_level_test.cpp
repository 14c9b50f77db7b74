#include "tokenizer/byte_level.h"

#include <gtest/gtest.h>

#include <set>

namespace flashdraft::tokenizer::byte_level {
namespace {

TEST(ByteLevel, KnownGpt2Characters) {
  EXPECT_EQ(byte_to_text('a'), "a");
  EXPECT_EQ(byte_to_text('~'), "~");
  EXPECT_EQ(byte_to_text(' '), "\xC4\xA0");    // U+0120
  EXPECT_EQ(byte_to_text('\n'), "\xC4\x8A");   // U+010A
  EXPECT_EQ(byte_to_text(0x00), "\xC4\x80");   // U+0100
  EXPECT_EQ(byte_to_text(0x7F), "\xC4\xA1");   // U+0121
  EXPECT_EQ(byte_to_text(0xAD), "\xC5\x83");   // U+0143
  EXPECT_EQ(byte_to_text(0xE9), "\xC3\xA9");   // printable Latin-1 maps to itself
}

TEST(ByteLevel, TableIsABijection) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& t = byte_to_text(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(t).second) << b;
    const auto back = text_to_bytes(t);
    ASSERT_TRUE(back.has_value()) << b;
    EXPECT_EQ(*back, std::string(1, static_cast<char>(b)));
  }
}

TEST(ByteLevel, TextOutsideTheAlphabetIsRejected) {
  EXPECT_EQ(text_to_bytes("<think>"), std::optional<std::string>("<think>"));
  EXPECT_EQ(text_to_bytes("\xC4\xA0hi"), std::optional<std::string>(" hi"));
  EXPECT_FALSE(text_to_bytes("\xE4\xB8\xAD").has_value());  // U+4E2D
  EXPECT_FALSE(text_to_bytes(" ").has_value());            // space is not in the alphabet
}

}  // namespace
}  // namespace flashdraft::tokenizer::byte_level
