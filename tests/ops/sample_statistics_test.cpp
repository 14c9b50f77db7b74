// Sampled frequencies follow the distribution sample_weights() describes: a
// chi-square goodness-of-fit test over the draws of many positions.
//
// False-alarm rate: the critical value is the chi-square quantile at
// alpha = 1e-4 (Wilson-Hilferty approximation, accurate to a few percent for
// these degrees of freedom), so a correct sampler fails for about 1 seed in
// 10,000. The seed is fixed, so the test is deterministic; it was not chosen
// to pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/cpu/sampling.h"
#include "test_support/chi_square.h"

namespace flashdraft::ops {
namespace {

using ::flashdraft::testing::chi_square_critical;
using ::flashdraft::testing::kZAlpha1e4;

double chi_square(const std::vector<int>& counts, const std::vector<double>& expected_probs, int n) {
  double chi2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (expected_probs[i] <= 0) continue;
    const double e = expected_probs[i] * n;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi2;
}

TEST(SampleStatistics, FrequenciesMatchFilteredDistribution) {
  const std::vector<float> logits = {2.0f, 1.2f, 0.3f, -0.4f, 1.9f, -3.0f, 0.8f, 0.0f, -1.0f, 1.0f};
  const auto vocab = static_cast<int64_t>(logits.size());
  SampleRow params;
  params.temperature = 0.9f;
  params.top_k = 8;
  params.top_p = 0.97f;
  params.min_p = 0.05f;
  params.seed_lo = 20261121;
  std::vector<float> w(logits.size());
  ASSERT_TRUE(cpu::sample_weights(logits.data(), vocab, params, w.data()));
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<double> expected;
  for (float x : w) expected.push_back(x / total);

  int support = 0;
  for (double q : expected) support += q > 0;
  ASSERT_GE(support, 4);                                 // the filters left a real distribution
  ASSERT_LT(support, static_cast<int>(logits.size()));  // ...and removed something

  constexpr int kDraws = 200000;
  std::vector<int> counts(logits.size(), 0);
  std::vector<float> scratch(logits.size());
  for (int i = 0; i < kDraws; ++i) {
    params.position = i;
    ++counts[static_cast<size_t>(cpu::sample_row(logits.data(), vocab, params, scratch.data()))];
  }

  for (size_t i = 0; i < counts.size(); ++i) {
    if (expected[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "filtered token " << i << " was sampled";
    }
  }
  const double critical = chi_square_critical(support - 1, kZAlpha1e4);
  const double chi2 = chi_square(counts, expected, kDraws);
  EXPECT_LT(chi2, critical) << "df " << support - 1;

  // The test has power: the same counts reject a distribution that moves 5%
  // of the mass between the two most likely tokens.
  std::vector<double> shifted = expected;
  const double delta = 0.05 * std::min(expected[0], expected[4]);
  shifted[0] += delta;
  shifted[4] -= delta;
  EXPECT_GT(chi_square(counts, shifted, kDraws), critical);
}

TEST(SampleStatistics, GreedyNeverSamplesAnythingElse) {
  const std::vector<float> logits = {0.1f, 0.2f, 0.19f};
  SampleRow params;
  params.temperature = 0.0f;
  std::vector<float> scratch(3);
  for (int i = 0; i < 1000; ++i) {
    params.position = i;
    ASSERT_EQ(cpu::sample_row(logits.data(), 3, params, scratch.data()), 1);
  }
}

}  // namespace
}  // namespace flashdraft::ops
