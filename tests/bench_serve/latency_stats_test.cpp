// Percentiles as numpy's default (linear) computes them.
#include "bench_serve/latency_stats.h"

#include <gtest/gtest.h>

namespace flashdraft::bench_serve {
namespace {

TEST(LatencyStats, PercentileInterpolatesBetweenRanks) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 3.97);  // numpy.percentile([1,2,3,4], 99)
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
}

TEST(LatencyStats, SummarySortsItsSamples) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 100 .. 1
  auto s = summarize(v);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->count, 100u);
  EXPECT_DOUBLE_EQ(s->mean, 50.5);
  EXPECT_DOUBLE_EQ(s->median, 50.5);
  EXPECT_NEAR(s->p99, 99.01, 1e-9);  // rank 0.99 * 99 = 98.01
}

TEST(LatencyStats, NoSamplesNoSummary) { EXPECT_FALSE(summarize({})); }

}  // namespace
}  // namespace flashdraft::bench_serve
