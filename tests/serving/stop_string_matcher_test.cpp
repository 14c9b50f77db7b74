#include "serving/stop_string_matcher.h"

#include <gtest/gtest.h>

#include <random>

#include "core/error.h"

namespace flashdraft::serving {
namespace {

// Feeds pieces one by one, collecting everything emitted (plus the final flush
// when no stop hit), the way the generation loop does.
struct Fed {
  std::string out;
  bool stopped = false;
};
Fed feed(StopStringMatcher& m, const std::vector<std::string>& pieces) {
  Fed fed;
  for (const auto& p : pieces) {
    auto step = m.push(p);
    fed.out += step.emit;
    if (step.stopped) {
      fed.stopped = true;
      break;
    }
  }
  if (!fed.stopped) fed.out += m.flush();
  return fed;
}

TEST(StopStringMatcher, NoStopsPassesEverythingThroughAtOnce) {
  StopStringMatcher m({});
  EXPECT_EQ(m.push("hello").emit, "hello");
  EXPECT_EQ(m.push(" world").emit, " world");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStringMatcher, StopInsideOnePieceCutsBeforeIt) {
  StopStringMatcher m({"END"});
  auto step = m.push("abcENDdef");
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.emit, "abc");
  EXPECT_EQ(m.matched(), "END");
}

TEST(StopStringMatcher, HoldsBackAPossibleStartUntilDecided) {
  StopStringMatcher m({"</answer>"});
  auto a = m.push("result: 42</an");
  EXPECT_FALSE(a.stopped);
  EXPECT_EQ(a.emit, "result: 42");
  EXPECT_EQ(m.held(), "</an");
  auto b = m.push("swer> trailing");
  EXPECT_TRUE(b.stopped);
  EXPECT_EQ(b.emit, "");
}

TEST(StopStringMatcher, ReleasesHeldTextWhenItTurnsOutNotToBeAStop) {
  StopStringMatcher m({"</answer>"});
  EXPECT_EQ(m.push("a </an").emit, "a ");
  auto step = m.push("t> b");
  EXPECT_FALSE(step.stopped);
  EXPECT_EQ(step.emit, "</ant> b");
  EXPECT_EQ(m.held(), "");
}

TEST(StopStringMatcher, StopSplitOverManySingleCharacterPieces) {
  StopStringMatcher m({"STOP"});
  auto fed = feed(m, {"x", "S", "T", "O", "P", "y"});
  EXPECT_TRUE(fed.stopped);
  EXPECT_EQ(fed.out, "x");
}

TEST(StopStringMatcher, FlushReleasesAnUnfinishedPrefixAtTheEnd) {
  StopStringMatcher m({"STOP"});
  EXPECT_EQ(m.push("abcST").emit, "abc");
  EXPECT_EQ(m.flush(), "ST");
}

TEST(StopStringMatcher, EarliestMatchAmongSeveralStopsWins) {
  StopStringMatcher m({"world", "lo w"});
  auto step = m.push("hello world");
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.emit, "hel");
  EXPECT_EQ(m.matched(), "lo w");
}

TEST(StopStringMatcher, RestartsPartialMatchInsideRepeatedCharacters) {
  // "aab" must be found in "aaab" although the first "aa" is a dead end.
  StopStringMatcher m({"aab"});
  EXPECT_EQ(m.push("a").emit, "");
  EXPECT_EQ(m.push("a").emit, "");
  EXPECT_EQ(m.push("a").emit, "a");
  auto step = m.push("b");
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.emit, "");
}

TEST(StopStringMatcher, HoldsTheLongestPossibleStartAcrossStops) {
  StopStringMatcher m({"xyz", "yzw"});
  EXPECT_EQ(m.push("ab xy").emit, "ab ");  // "xy" could begin "xyz"
  auto step = m.push("zz");
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.emit, "");
  EXPECT_EQ(m.matched(), "xyz");
}

TEST(StopStringMatcher, MultibyteStopStringsAreHeldWhole) {
  StopStringMatcher m({"\xe3\x80\x82\xe3\x80\x82"});  // "。。"
  EXPECT_EQ(m.push("\xe5\xa5\xbd\xe3\x80\x82").emit, "\xe5\xa5\xbd");
  auto step = m.push("\xe3\x80\x82");
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.emit, "");
}

TEST(StopStringMatcher, IgnoresPiecesAfterStopping) {
  StopStringMatcher m({"!"});
  EXPECT_TRUE(m.push("hi!").stopped);
  auto after = m.push("more");
  EXPECT_EQ(after.emit, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStringMatcher, RejectsEmptyStopString) { EXPECT_THROW(StopStringMatcher({"ok", ""}), flashdraft::Error); }

// Brute-force reference: the safe prefix of everything seen so far ends at the
// first position whose suffix is still a (possibly empty) prefix of some stop.
size_t reference_safe_length(const std::string& seen, const std::vector<std::string>& stops) {
  for (size_t p = 0; p <= seen.size(); ++p) {
    std::string_view tail(seen.data() + p, seen.size() - p);
    for (const auto& s : stops) {
      if (tail.size() < s.size() && std::string_view(s).substr(0, tail.size()) == tail) return p;
    }
  }
  return seen.size();
}

TEST(StopStringMatcher, MatchesBruteForceOnRandomStreams) {
  std::mt19937 rng(1234);
  const std::string alphabet = "ab c";
  auto rand_string = [&](size_t lo, size_t hi) {
    std::string s(std::uniform_int_distribution<size_t>(lo, hi)(rng), ' ');
    for (char& c : s) c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
    return s;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    for (int i = std::uniform_int_distribution<int>(1, 3)(rng); i > 0; --i) stops.push_back(rand_string(1, 4));
    std::string text = rand_string(0, 30);

    StopStringMatcher m(stops);
    std::string seen, out;
    bool stopped = false;
    size_t cut = std::string::npos;  // where the answer ends, once a stop has appeared
    for (size_t i = 0; i < text.size() && !stopped;) {
      size_t n = std::uniform_int_distribution<size_t>(0, 4)(rng);
      n = std::min(n, text.size() - i);
      seen += text.substr(i, n);
      auto step = m.push(text.substr(i, n));
      i += n;
      out += step.emit;
      stopped = step.stopped;
      // Streaming can only stop on what has arrived: the first time any stop
      // string occurs in the text so far, the answer ends at the earliest one.
      for (const auto& s : stops) cut = std::min(cut, seen.find(s));
      ASSERT_EQ(stopped, cut != std::string::npos) << "text=" << text << " seen=" << seen;
      if (!stopped) {
        // Nothing emitted early, nothing held longer than needed.
        ASSERT_EQ(out.size(), reference_safe_length(seen, stops)) << "text=" << text << " seen=" << seen;
        ASSERT_EQ(out + m.held(), seen);
      }
    }
    if (!stopped) {
      out += m.flush();
      ASSERT_EQ(out, text);
    } else {
      ASSERT_EQ(out, seen.substr(0, cut)) << "text=" << text << " seen=" << seen;
    }
  }
}

TEST(StopStringMatcher, StopsAtTheFirstStopToComplete) {
  // "c" completes before the longer "bc d" could: streaming cannot wait for it.
  StopStringMatcher m({"bc d", "c"});
  EXPECT_EQ(m.push("a b").emit, "a ");
  auto step = m.push("c");
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.emit, "b");
  EXPECT_EQ(m.matched(), "c");
}

TEST(StopStringMatcher, WithinOnePieceTheEarlierStartWins) {
  StopStringMatcher m({"bc d", "c"});
  EXPECT_EQ(m.push("a b").emit, "a ");
  auto step = m.push("c d");
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.emit, "");
  EXPECT_EQ(m.matched(), "bc d");
}

}  // namespace
}  // namespace flashdraft::serving
