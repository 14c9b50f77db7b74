#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

SamplingParams with(double temperature, int top_k = 0, double top_p = 1.0, double min_p = 0.0,
                    uint64_t seed = 1) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.seed = seed;
  return p;
}

std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

// Softmax computed here, independently of the sampler.
std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  double max = -INFINITY;
  for (float l : logits) max = std::max(max, l / temperature);
  std::vector<double> out;
  double sum = 0;
  for (float l : logits) sum += std::exp(l / temperature - max);
  for (float l : logits) out.push_back(std::exp(l / temperature - max) / sum);
  return out;
}

void expect_probs(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "token " << i;
}

std::vector<int32_t> support(const std::vector<float>& probs) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] > 0) out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

TEST(Sampler, GreedyIsArgmaxLowestIdOnTies) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits(1000);
    for (float& l : logits) l = normal(gen);
    Sampler s(with(0.0));
    const auto want = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(s.sample(logits), want);
    const auto p = s.probs(logits);
    EXPECT_EQ(p[want], 1.0f);
    EXPECT_EQ(std::accumulate(p.begin(), p.end(), 0.0), 1.0);
  }
  Sampler s(with(0.0));
  const std::vector<float> tied = {0, 3, -1, 3, 3};
  EXPECT_EQ(s.sample(tied), 1);
  EXPECT_EQ(support(s.probs(tied)), std::vector<int32_t>{1});
}

TEST(Sampler, TopK1IsGreedy) {
  std::mt19937 gen(3);
  std::normal_distribution<float> normal;
  std::vector<float> logits(300);
  for (float& l : logits) l = normal(gen);
  const int32_t want = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  Sampler s(with(1.5, /*top_k=*/1));
  for (int i = 0; i < 200; ++i) ASSERT_EQ(s.sample(logits), want);
  EXPECT_EQ(support(s.probs(logits)), std::vector<int32_t>{want});
}

TEST(Sampler, TemperatureScalesLogits) {
  const std::vector<float> logits = {1.0f, 2.0f, -0.5f, 0.0f};
  for (double t : {0.3, 1.0, 2.0}) {
    Sampler s(with(t));
    expect_probs(s.probs(logits), softmax(logits, t));
  }
}

TEST(Sampler, TopKKeepsTheKLargestAndBoundaryTies) {
  const std::vector<float> logits = {1, 5, 3, 4, 2};
  Sampler s(with(1.0, 2));
  const double e5 = std::exp(5.0), e4 = std::exp(4.0);
  expect_probs(s.probs(logits), {0, e5 / (e5 + e4), 0, e4 / (e5 + e4), 0});

  // k=2 but the 2nd and 3rd largest tie: both stay, as in HF.
  const std::vector<float> tied = {5, 3, 3, 1};
  EXPECT_EQ(support(Sampler(with(1.0, 2)).probs(tied)), (std::vector<int32_t>{0, 1, 2}));
  // k at least the vocabulary size: nothing is removed.
  EXPECT_EQ(support(Sampler(with(1.0, 9)).probs(tied)), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingTheMass) {
  // Shuffled so the order of ids is not the order of probabilities.
  const auto logits = logits_of({0.15, 0.5, 0.05, 0.3});
  EXPECT_EQ(support(Sampler(with(1.0, 0, 0.4)).probs(logits)), std::vector<int32_t>{1});
  // 0.5 < 0.7 so the 0.3 token is needed; then 0.8 >= 0.7 stops.
  const auto p = Sampler(with(1.0, 0, 0.7)).probs(logits);
  expect_probs(p, {0, 0.5 / 0.8, 0, 0.3 / 0.8});
  EXPECT_EQ(support(Sampler(with(1.0, 0, 0.85)).probs(logits)), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(support(Sampler(with(1.0, 0, 1.0)).probs(logits)), (std::vector<int32_t>{0, 1, 2, 3}));
  // A tiny top_p still keeps the most probable token.
  EXPECT_EQ(support(Sampler(with(1.0, 0, 1e-9)).probs(logits)), std::vector<int32_t>{1});
}

// A large vocabulary exercises the widening partial sort; the reference here
// sorts everything.
TEST(Sampler, TopPOnLargeVocabularyMatchesFullSort) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> logits(20000);
  for (float& l : logits) l = normal(gen);
  for (double top_p : {0.01, 0.3, 0.9, 0.999}) {
    const auto p = softmax(logits, 0.8);
    std::vector<int32_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
    std::vector<int32_t> want;
    double mass = 0;
    for (int32_t i : order) {
      if (mass >= top_p) break;
      want.push_back(i);
      mass += p[i];
    }
    std::sort(want.begin(), want.end());
    const auto got = Sampler(with(0.8, 0, top_p)).probs(logits);
    EXPECT_EQ(support(got), want) << "top_p " << top_p;
    EXPECT_NEAR(std::accumulate(got.begin(), got.end(), 0.0), 1.0, 1e-5);
  }
}

// Both selection strategies (a heap for small k, a partition for large k)
// against a full sort.
TEST(Sampler, TopKOnLargeVocabularyMatchesFullSort) {
  std::mt19937 gen(5);
  std::uniform_int_distribution<int> coarse(-300, 300);  // coarse values make ties common
  std::vector<float> logits(30000);
  for (float& l : logits) l = coarse(gen) * 0.01f;
  for (int k : {1, 20, 1000, 1500, 29999}) {
    std::vector<float> sorted = logits;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    std::vector<int32_t> want;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (logits[i] >= sorted[k - 1]) want.push_back(static_cast<int32_t>(i));
    }
    EXPECT_EQ(support(Sampler(with(1.0, k)).probs(logits)), want) << "k " << k;
  }
}

TEST(Sampler, SampleDrawsFromProbs) {
  std::mt19937 gen(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(5000);
  for (float& l : logits) l = normal(gen);
  const SamplingParams params = with(0.7, 50, 0.9, 0.01, 77);
  Sampler direct(params), via_probs(params);
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(direct.sample(logits), via_probs.sample_from_probs(via_probs.probs(logits))) << i;
  }
}

TEST(Sampler, MinPDropsTokensBelowFractionOfTop) {
  const auto logits = logits_of({0.15, 0.5, 0.05, 0.3});
  // Threshold 0.2 * 0.5 = 0.1: only the 0.05 token goes.
  const auto p = Sampler(with(1.0, 0, 1.0, 0.2)).probs(logits);
  expect_probs(p, {0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95});
  // Threshold 0.35 drops the 0.3 token too.
  EXPECT_EQ(support(Sampler(with(1.0, 0, 1.0, 0.7)).probs(logits)), std::vector<int32_t>{1});
}

TEST(Sampler, FiltersRunInHuggingFaceOrder) {
  const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
  // top-k first: {0.4, 0.3} renormalised is {0.571, 0.429}; top-p 0.5 then
  // keeps one token. (top-p on the raw distribution would keep two.)
  EXPECT_EQ(support(Sampler(with(1.0, 2, 0.5)).probs(logits)), std::vector<int32_t>{0});
  // top-p before min-p: top-p 0.75 keeps {0.4, 0.3, 0.2}; min-p 0.3 then keeps
  // all three. (min-p first would drop 0.1, renormalise, and top-p would
  // then stop after two.)
  EXPECT_EQ(support(Sampler(with(1.0, 0, 0.75, 0.3)).probs(logits)), (std::vector<int32_t>{0, 1, 2}));
}

TEST(Sampler, MaskedLogitsAreNeverSampled) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {ninf, 0.0f, ninf, 0.0f};
  Sampler s(with(1.0));
  expect_probs(s.probs(logits), {0, 0.5, 0, 0.5});
  for (int i = 0; i < 100; ++i) {
    const int32_t t = s.sample(logits);
    ASSERT_TRUE(t == 1 || t == 3) << t;
  }
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedsDiffer) {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(float(i));
  auto run = [&](uint64_t seed) {
    Sampler s(with(1.0, 0, 1.0, 0.0, seed));
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(s.sample(logits));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
  // Unseeded samplers draw their seed from std::random_device.
  SamplingParams unseeded;
  Sampler a(unseeded), b(unseeded);
  std::vector<int32_t> sa, sb;
  for (int i = 0; i < 200; ++i) sa.push_back(a.sample(logits)), sb.push_back(b.sample(logits));
  EXPECT_NE(sa, sb);
}

TEST(Sampler, SampleFromProbsHonoursZeroWeights) {
  Sampler s(with(1.0));
  const std::vector<float> weights = {0, 2, 0, 0, 1, 0};
  int counts[6] = {};
  for (int i = 0; i < 3000; ++i) ++counts[s.sample_from_probs(weights)];
  EXPECT_EQ(counts[0] + counts[2] + counts[3] + counts[5], 0);
  EXPECT_GT(counts[1], counts[4]);
  EXPECT_THROW(s.sample_from_probs(std::vector<float>{0, 0}), Error);
  EXPECT_THROW(s.sample_from_probs(std::vector<float>{0.5f, -0.1f}), Error);
  for (int i = 0; i < 1000; ++i) {
    const double u = s.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(Sampler, InvalidParamsAndLogitsAreErrors) {
  auto message = [](const SamplingParams& p) {
    try {
      Sampler s(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(with(-0.5)).find("temperature"), std::string::npos);
  EXPECT_NE(message(with(NAN)).find("temperature"), std::string::npos);
  EXPECT_NE(message(with(1.0, -1)).find("top_k"), std::string::npos);
  EXPECT_NE(message(with(1.0, 0, 0.0)).find("top_p"), std::string::npos);
  EXPECT_NE(message(with(1.0, 0, 1.5)).find("top_p"), std::string::npos);
  EXPECT_NE(message(with(1.0, 0, 1.0, -0.1)).find("min_p"), std::string::npos);
  EXPECT_NE(message(with(1.0, 0, 1.0, 1.1)).find("min_p"), std::string::npos);
  EXPECT_EQ(message(with(0.0, 5, 0.9, 0.1)), "no error");

  Sampler s(with(1.0));
  EXPECT_THROW(s.sample(std::vector<float>{}), Error);
  EXPECT_THROW(s.sample(std::vector<float>{0.0f, NAN}), Error);
  EXPECT_THROW(s.sample(std::vector<float>{0.0f, INFINITY}), Error);
  EXPECT_THROW(s.sample(std::vector<float>{-INFINITY, -INFINITY}), Error);
  Sampler greedy(with(0.0));
  EXPECT_THROW(greedy.sample(std::vector<float>{NAN, 1.0f}), Error);
}

}  // namespace
}  // namespace flashdraft::engine
