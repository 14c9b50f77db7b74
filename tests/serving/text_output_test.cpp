#include "serving/text_output.h"

#include <gtest/gtest.h>

#include <random>

#include "core/error.h"

namespace flashdraft::serving {
namespace {

// The tiny tokenizer is byte level with few merges: most characters are one
// token each and a multi-byte character is split over several.
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

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Pushes ids one at a time until a stop; returns how many were pushed.
size_t push_until_stop(TextOutput& out, const std::vector<int32_t>& ids) {
  size_t pushed = 0;
  for (int32_t id : ids) {
    ++pushed;
    if (out.push(id).stopped) break;
  }
  return pushed;
}

TEST(TextOutput, DeltasAreWholeCharactersAndJoinToTheExactText) {
  auto tok = tiny();
  const std::string text = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe2\x9c\x93 \xf0\x9f\x98\x80 the end";
  auto ids = tok.encode(text);
  ASSERT_GT(ids.size(), 10u);
  TextOutput out(tok, {});
  std::vector<std::string> deltas;
  for (int32_t id : ids) {
    TextOutput::Delta d = out.push(id);
    EXPECT_FALSE(d.stopped);
    deltas.push_back(d.text);
  }
  deltas.push_back(out.finish().text);
  std::string joined;
  for (const auto& d : deltas) {
    EXPECT_TRUE(is_complete_utf8(d)) << "a delta splits a character";
    joined += d;
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(out.text(), text);
  // The multi-byte characters span several ids, so some pushes give nothing.
  EXPECT_GT(std::count(deltas.begin(), deltas.end(), ""), 0);
}

TEST(TextOutput, AStopStringSplitAcrossIdsIsNeverShown) {
  auto tok = tiny();
  auto ids = tok.encode("alpha beta END gamma delta");
  ASSERT_EQ(tok.encode("END").size(), 3u) << "the stop string should span several ids";
  TextOutput out(tok, {"END"});
  size_t pushed = 0;
  for (int32_t id : ids) {
    ++pushed;
    TextOutput::Delta d = out.push(id);
    // Nothing past the answer, not even "E" or "EN", is ever out.
    EXPECT_TRUE(starts_with("alpha beta ", out.text())) << out.text();
    if (d.stopped) break;
  }
  EXPECT_TRUE(out.stopped());
  EXPECT_EQ(out.stop_string(), "END");
  EXPECT_EQ(out.text(), "alpha beta ");
  // It stopped on the id that completed "END", not later.
  EXPECT_EQ(tok.decode(std::span<const int32_t>(ids.data(), pushed)), "alpha beta END");
  EXPECT_EQ(out.finish().text, "");
}

TEST(TextOutput, AMultiByteStopStringSplitAcrossIds) {
  auto tok = tiny();
  auto ids = tok.encode("h\xc3\xa9llo");
  TextOutput out(tok, {"\xc3\xa9"});
  const size_t pushed = push_until_stop(out, ids);
  EXPECT_EQ(out.text(), "h");
  EXPECT_TRUE(out.stopped());
  EXPECT_EQ(tok.decode(std::span<const int32_t>(ids.data(), pushed)), "h\xc3\xa9");
}

TEST(TextOutput, IdsInStepsGiveTheSameTextAsIdsOneByOne) {
  // The engine hands over several ids per step (accepted drafts): a stop
  // string may complete in the middle of a step or straddle two steps.
  auto tok = tiny();
  const std::string text = "the quick brown fox jumps over the lazy dog, then the quick fox naps";
  auto ids = tok.encode(text);
  const std::vector<std::vector<std::string>> stop_sets = {
      {}, {"fox"}, {"k b"}, {"zzz", "dog,"}, {"quick fox", "jumps"}, {"naps"}, {"the lazy dog, then the"}};
  std::mt19937 rng(7);
  for (const auto& stops : stop_sets) {
    TextOutput single(tok, stops);
    push_until_stop(single, ids);
    single.finish();
    for (int trial = 0; trial < 20; ++trial) {
      TextOutput stepped(tok, stops);
      std::string joined;
      size_t at = 0;
      while (at < ids.size()) {
        const size_t n = std::min<size_t>(1 + rng() % 6, ids.size() - at);
        TextOutput::Delta d = stepped.push(std::span<const int32_t>(ids.data() + at, n));
        joined += d.text;
        EXPECT_TRUE(starts_with(single.text(), joined)) << "a delta went past the answer";
        at += n;
        if (d.stopped) break;
      }
      joined += stepped.finish().text;
      EXPECT_EQ(joined, single.text()) << "stops: " << ::testing::PrintToString(stops);
      EXPECT_EQ(stepped.stop_string(), single.stop_string());
    }
  }
}

TEST(TextOutput, AStopStringThatIsAPrefixOfAnotherEndsTheTextFirst) {
  auto tok = tiny();
  auto ids = tok.encode("beta gamma delta");
  for (const std::vector<std::string>& stops : {std::vector<std::string>{"gamma", "gam"}, {"gam", "gamma"}}) {
    TextOutput out(tok, stops);
    push_until_stop(out, ids);
    EXPECT_EQ(out.text(), "beta ");
    EXPECT_EQ(out.stop_string(), "gam");
  }
  // The stop that completes first wins, even if another began earlier.
  TextOutput out(tok, {"a gamma d", "gam"});
  push_until_stop(out, ids);
  EXPECT_EQ(out.text(), "beta ");
  EXPECT_EQ(out.stop_string(), "gam");
}

TEST(TextOutput, AHeldBackStartThatTurnsOutNotToBeAStopIsReleased) {
  auto tok = tiny();
  auto ids = tok.encode("to be EN and on");
  const size_t through_en = tok.encode("to be EN").size();
  TextOutput out(tok, {"END"});
  for (size_t i = 0; i < through_en; ++i) EXPECT_FALSE(out.push(ids[i]).stopped);
  EXPECT_EQ(out.text(), "to be ");
  // The next id (" and") shows "EN" cannot grow into "END": all of it is out.
  TextOutput::Delta d = out.push(ids[through_en]);
  EXPECT_EQ("to be " + d.text, tok.decode(std::span<const int32_t>(ids.data(), through_en + 1)));
  EXPECT_TRUE(starts_with(d.text, "EN ")) << d.text;
  for (size_t i = through_en + 1; i < ids.size(); ++i) out.push(ids[i]);
  out.finish();
  EXPECT_EQ(out.text(), "to be EN and on");
  EXPECT_FALSE(out.stopped());
}

TEST(TextOutput, FinishFlushesAHeldBackStartAndAnUnfinishedCharacter) {
  auto tok = tiny();
  TextOutput stop_start(tok, {"END"});
  for (int32_t id : tok.encode("to be continued EN")) stop_start.push(id);
  EXPECT_EQ(stop_start.text(), "to be continued ");
  EXPECT_EQ(stop_start.finish().text, "EN");
  EXPECT_EQ(stop_start.text(), "to be continued EN");
  EXPECT_EQ(stop_start.finish().text, "") << "a second finish adds nothing";

  auto ids = tok.encode("h\xc3\xa9");
  ASSERT_EQ(ids.size(), 3u);
  TextOutput half(tok, {});
  half.push(ids[0]);
  half.push(ids[1]);  // the first byte of "é" only
  EXPECT_EQ(half.text(), "h");
  EXPECT_EQ(half.finish().text, "\xef\xbf\xbd");  // U+FFFD, as a full decode gives
}

TEST(TextOutput, SpecialTokensAreSkippedUnlessAskedFor) {
  auto tok = tiny();
  auto ids = tok.encode("<|im_start|>assistant\n<think>\nhi</think><|im_end|>", /*parse_special=*/true);
  ASSERT_EQ(ids.front(), *tok.token_to_id("<|im_start|>"));
  TextOutput skipped(tok, {});
  skipped.push(ids);
  skipped.finish();
  EXPECT_EQ(skipped.text(), "assistant\n<think>\nhi</think>");  // <think> is added but not special
  TextOutput kept(tok, {}, /*skip_special_tokens=*/false);
  kept.push(ids);
  kept.finish();
  EXPECT_EQ(kept.text(), "<|im_start|>assistant\n<think>\nhi</think><|im_end|>");
}

TEST(TextOutput, IdsPastTheTokenizerVocabularyAddNoText) {
  auto tok = tiny();
  auto ids = tok.encode("ab");
  TextOutput out(tok, {});
  out.push(ids[0]);
  EXPECT_EQ(out.push(tok.vocab_size() + 3).text, "");  // a padded embedding row
  for (size_t i = 1; i < ids.size(); ++i) out.push(ids[i]);
  out.finish();
  EXPECT_EQ(out.text(), "ab");
}

TEST(TextOutput, NothingComesAfterAStop) {
  auto tok = tiny();
  TextOutput out(tok, {"!"});
  TextOutput::Delta d = out.push(tok.encode("hi! more"));
  EXPECT_EQ(d.text, "hi");
  EXPECT_TRUE(d.stopped);
  EXPECT_EQ(out.push(tok.encode("x")).text, "");
  EXPECT_EQ(out.finish().text, "");
  EXPECT_EQ(out.text(), "hi");
}

TEST(TextOutput, AnEmptyStopStringIsRejected) { EXPECT_THROW(TextOutput(tiny(), {"ok", ""}), Error); }

}  // namespace
}  // namespace flashdraft::serving
