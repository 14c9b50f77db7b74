// Unit tests of draft verification: greedy prefix matching and the lossless
// sampling rule's mechanics (its statistics are in acceptance_statistics_test).
#include "engine/acceptance.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

constexpr int64_t kVocab = 5;

// Rows whose argmax is the given token (logit 2 there, 0 elsewhere).
std::vector<float> rows_with_argmax(const std::vector<int32_t>& tops) {
  std::vector<float> rows(tops.size() * kVocab, 0.0f);
  for (size_t i = 0; i < tops.size(); ++i) rows[i * kVocab + static_cast<size_t>(tops[i])] = 2.0f;
  return rows;
}

SamplingParams seeded(double temperature, uint64_t seed = 7) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  return p;
}

TEST(AcceptGreedy, AllDraftsMatchGivesBonusFromLastRow) {
  const std::vector<int32_t> drafts = {3, 1, 4};
  const auto rows = rows_with_argmax({3, 1, 4, 2});
  Acceptance a = accept_greedy(rows, kVocab, drafts);
  EXPECT_EQ(a.accepted, 3);
  EXPECT_EQ(a.bonus, 2);
}

TEST(AcceptGreedy, StopsAtFirstMismatchAndTakesTargetToken) {
  const std::vector<int32_t> drafts = {3, 1, 4};
  // Row 1 disagrees with d2; row 2 would agree with d3 but must not matter.
  const auto rows = rows_with_argmax({3, 0, 4, 2});
  Acceptance a = accept_greedy(rows, kVocab, drafts);
  EXPECT_EQ(a.accepted, 1);
  EXPECT_EQ(a.bonus, 0);
}

TEST(AcceptGreedy, FirstDraftWrong) {
  const std::vector<int32_t> drafts = {3, 1};
  const auto rows = rows_with_argmax({2, 1, 4});
  Acceptance a = accept_greedy(rows, kVocab, drafts);
  EXPECT_EQ(a.accepted, 0);
  EXPECT_EQ(a.bonus, 2);
}

TEST(AcceptGreedy, NoDraftsIsPlainDecoding) {
  const auto rows = rows_with_argmax({4});
  Acceptance a = accept_greedy(rows, kVocab, {});
  EXPECT_EQ(a.accepted, 0);
  EXPECT_EQ(a.bonus, 4);
}

TEST(AcceptGreedy, TiesGoToTheLowestIdLikeTheSampler) {
  std::vector<float> rows(2 * kVocab, 0.0f);
  rows[1] = rows[3] = 1.0f;  // row 0: ids 1 and 3 tie
  const std::vector<int32_t> drafts = {3};
  EXPECT_EQ(accept_greedy(rows, kVocab, drafts).accepted, 0);
  const std::vector<int32_t> lowest = {1};
  EXPECT_EQ(accept_greedy(rows, kVocab, lowest).accepted, 1);
}

TEST(Accept, BadShapesAreErrors) {
  const auto rows = rows_with_argmax({3, 1});
  const std::vector<int32_t> two = {3, 1};
  EXPECT_THROW(accept_greedy(rows, kVocab, two), Error);  // needs 3 rows
  const std::vector<int32_t> outside = {kVocab};
  EXPECT_THROW(accept_greedy(rows, kVocab, outside), Error);
  Sampler s(seeded(1.0));
  EXPECT_THROW(accept_sampling(rows, kVocab, two, s), Error);
}

TEST(AcceptSampling, GreedySamplerAgreesWithGreedyRule) {
  Sampler s(seeded(0.0));
  const std::vector<int32_t> drafts = {3, 1, 4};
  for (const auto& tops : std::vector<std::vector<int32_t>>{{3, 1, 4, 2}, {3, 0, 4, 2}, {1, 1, 4, 0}}) {
    const auto rows = rows_with_argmax(tops);
    Acceptance g = accept_greedy(rows, kVocab, drafts);
    Acceptance r = accept_sampling(rows, kVocab, drafts, s);
    EXPECT_EQ(r.accepted, g.accepted);
    EXPECT_EQ(r.bonus, g.bonus);
    Acceptance d = accept(rows, kVocab, drafts, s);
    EXPECT_EQ(d.accepted, g.accepted);
    EXPECT_EQ(d.bonus, g.bonus);
  }
}

TEST(AcceptSampling, ImpossibleDraftIsAlwaysRejectedAndNeverResampled) {
  // top_k 2 leaves ids 0 and 1; the draft 4 has probability 0.
  SamplingParams p = seeded(1.0);
  p.top_k = 2;
  Sampler s(p);
  std::vector<float> rows = {3.0f, 2.5f, 0.0f, 0.0f, 1.0f, /*row 1*/ 0, 0, 0, 0, 0};
  const std::vector<int32_t> drafts = {4};
  for (int i = 0; i < 200; ++i) {
    Acceptance a = accept_sampling(rows, kVocab, drafts, s);
    ASSERT_EQ(a.accepted, 0);
    ASSERT_TRUE(a.bonus == 0 || a.bonus == 1) << a.bonus;
  }
}

TEST(AcceptSampling, CertainDraftIsAlwaysAccepted) {
  SamplingParams p = seeded(1.0);
  p.top_k = 1;  // the distribution is one-hot at the argmax
  Sampler s(p);
  const auto rows = rows_with_argmax({2, 3, 0});
  const std::vector<int32_t> drafts = {2, 3};
  for (int i = 0; i < 100; ++i) {
    Acceptance a = accept_sampling(rows, kVocab, drafts, s);
    ASSERT_EQ(a.accepted, 2);
    ASSERT_EQ(a.bonus, 0);
  }
}

TEST(AcceptSampling, RejectionNeverReturnsTheRejectedDraft) {
  Sampler s(seeded(1.0, 99));
  std::vector<float> rows = {1.0f, 1.2f, 0.5f, 0.1f, 0.9f, /*row 1*/ 0, 0, 0, 0, 0};
  const std::vector<int32_t> drafts = {1};
  int rejected = 0, accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    Acceptance a = accept_sampling(rows, kVocab, drafts, s);
    if (a.accepted == 0) {
      ++rejected;
      ASSERT_NE(a.bonus, 1);
    } else {
      ++accepted;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace flashdraft::engine
