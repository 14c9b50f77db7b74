#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace flashdraft::tokenizer::utf8 {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string lossy(std::string_view s) {
  std::string out;
  append_lossy(s, out);
  return out;
}

TEST(Utf8, FindInvalidAcceptsWellFormedText) {
  EXPECT_EQ(find_invalid(""), std::string_view::npos);
  EXPECT_EQ(find_invalid("plain ascii"), std::string_view::npos);
  EXPECT_EQ(find_invalid("caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"), std::string_view::npos);
  EXPECT_EQ(find_invalid(std::string_view("a\0b", 3)), std::string_view::npos);
}

TEST(Utf8, FindInvalidRejectsMalformedSequences) {
  EXPECT_EQ(find_invalid("ab\xC3"), 2u);                 // truncated
  EXPECT_EQ(find_invalid("\xC0\x80"), 0u);               // overlong NUL
  EXPECT_EQ(find_invalid("x\xE0\x80\x80"), 1u);          // overlong 3-byte
  EXPECT_EQ(find_invalid("\xED\xA0\x80"), 0u);           // surrogate
  EXPECT_EQ(find_invalid("\xF4\x90\x80\x80"), 0u);       // above U+10FFFF
  EXPECT_EQ(find_invalid("ok\x80"), 2u);                 // lone continuation
  EXPECT_EQ(find_invalid("\xFF"), 0u);
}

TEST(Utf8, LossyReplacesEachMaximalInvalidSubpartOnce) {
  EXPECT_EQ(lossy("Hello \xF0\x90\x80World"), "Hello " + kFffd + "World");
  EXPECT_EQ(lossy("\xF0\x80\x80"), kFffd + kFffd + kFffd);  // F0 80 is never a prefix
  EXPECT_EQ(lossy("\xC3\x28"), kFffd + "(");
  EXPECT_EQ(lossy("\xE0\xA0"), kFffd);
  EXPECT_EQ(lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  EXPECT_EQ(lossy("a\xC3\xA9z"), "a\xC3\xA9z");
}

TEST(Utf8, IncompleteTailCountsOnlyValidPrefixes) {
  EXPECT_EQ(incomplete_tail("abc"), 0u);
  EXPECT_EQ(incomplete_tail("a\xC3"), 1u);
  EXPECT_EQ(incomplete_tail("\xE2\x82"), 2u);
  EXPECT_EQ(incomplete_tail("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(incomplete_tail("a\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(incomplete_tail("\xE0\x80"), 0u);  // already invalid: nothing to wait for
  EXPECT_EQ(incomplete_tail("\x80\x80"), 0u);
  EXPECT_EQ(incomplete_tail(""), 0u);
}

}  // namespace
}  // namespace flashdraft::tokenizer::utf8
