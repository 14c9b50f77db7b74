#include "engine/spec_stats.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

TEST(SpecStats, EmptyHasNoTau) {
  SpecStats s;
  EXPECT_EQ(s.drafts(), 0);
  EXPECT_EQ(s.tau(), 0.0);
  EXPECT_TRUE(s.acceptance_rates().empty());
}

TEST(SpecStats, CountsTauAndPerPositionRates) {
  SpecStats s;
  s.record(3, 3);  // a = 3
  s.record(3, 0);  // a = 0
  s.record(3, 1);  // a = 1
  s.record(2, 2);  // a shorter draft (e.g. near max_tokens)
  EXPECT_EQ(s.drafts(), 4);
  EXPECT_EQ(s.draft_tokens(), 11);
  EXPECT_EQ(s.accepted_tokens(), 6);
  EXPECT_DOUBLE_EQ(s.tau(), (4.0 + 1 + 2 + 3) / 4);
  ASSERT_EQ(s.accepted_at(), (std::vector<int64_t>{3, 2, 1}));
  ASSERT_EQ(s.proposed_at(), (std::vector<int64_t>{4, 4, 3}));
  const auto r = s.acceptance_rates();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0], 0.75);
  EXPECT_DOUBLE_EQ(r[1], 0.5);
  EXPECT_DOUBLE_EQ(r[2], 1.0 / 3);
  EXPECT_NE(s.summary().find("tau 2.50"), std::string::npos) << s.summary();
}

TEST(SpecStats, MergeEqualsRecordingEverythingInOne) {
  SpecStats a, b, all;
  a.record(2, 1);
  b.record(4, 4);
  b.record(4, 2);
  for (auto [p, k] : {std::pair{2, 1}, {4, 4}, {4, 2}}) all.record(p, k);
  a.merge(b);
  EXPECT_EQ(a.drafts(), all.drafts());
  EXPECT_EQ(a.accepted_tokens(), all.accepted_tokens());
  EXPECT_EQ(a.accepted_at(), all.accepted_at());
  EXPECT_EQ(a.proposed_at(), all.proposed_at());
  EXPECT_DOUBLE_EQ(a.tau(), all.tau());
}

TEST(SpecStats, ImpossibleCountsAreErrors) {
  SpecStats s;
  EXPECT_THROW(s.record(2, 3), Error);
  EXPECT_THROW(s.record(-1, 0), Error);
}

}  // namespace
}  // namespace flashdraft::engine
