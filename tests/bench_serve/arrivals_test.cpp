// Poisson arrivals: seeded, the asked mean rate, exponential gaps.
#include "bench_serve/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>

namespace flashdraft::bench_serve {
namespace {

TEST(Arrivals, InfiniteRateSendsAllAtOnce) {
  for (double t : arrival_times(5, INFINITY, 1)) EXPECT_EQ(t, 0.0);
}

TEST(Arrivals, SeededAndReproducible) {
  EXPECT_EQ(arrival_times(50, 4.0, 7), arrival_times(50, 4.0, 7));
  EXPECT_NE(arrival_times(50, 4.0, 7), arrival_times(50, 4.0, 8));
}

TEST(Arrivals, MeanRateAndExponentialGaps) {
  const double rate = 8.0;
  const size_t n = 20001;
  const std::vector<double> t = arrival_times(n, rate, 123);
  ASSERT_EQ(t.size(), n);
  EXPECT_EQ(t[0], 0.0);
  double sum = 0, sum_sq = 0;
  for (size_t i = 1; i < n; ++i) {
    const double gap = t[i] - t[i - 1];
    ASSERT_GE(gap, 0.0);
    sum += gap;
    sum_sq += gap * gap;
  }
  const double mean = sum / (n - 1);
  const double sd = std::sqrt(sum_sq / (n - 1) - mean * mean);
  // 20000 gaps: the mean's relative standard error is 0.7%.
  EXPECT_NEAR(mean, 1 / rate, 0.04 / rate);
  // Exponential gaps have sd == mean (evenly spaced arrivals would have 0).
  EXPECT_NEAR(sd / mean, 1.0, 0.05);
}

}  // namespace
}  // namespace flashdraft::bench_serve
