// The CPU reference of Backend::sample and Backend::accept (ops/cpu/sampling.h):
// the filters' semantics, the random key, the shared weight arithmetic, and
// draft verification's mechanics (its statistics: accept_statistics_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "ops/backend.h"
#include "ops/cpu/sampling.h"
#include "ops/sample_math.h"

namespace flashdraft::ops {
namespace {

namespace sm = sample_math;

SampleRow with(float temperature, int32_t top_k = 0, float top_p = 1.0f, float min_p = 0.0f, uint64_t seed = 1,
               int32_t position = 0) {
  SampleRow p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.seed_lo = static_cast<uint32_t>(seed);
  p.seed_hi = static_cast<uint32_t>(seed >> 32);
  p.position = position;
  return p;
}

std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

// The normalised distribution sample() draws from.
std::vector<double> probs(const std::vector<float>& logits, const SampleRow& p) {
  std::vector<float> w(logits.size());
  EXPECT_TRUE(cpu::sample_weights(logits.data(), static_cast<int64_t>(logits.size()), p, w.data()));
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<double> out;
  for (float x : w) out.push_back(x / total);
  return out;
}

std::vector<int32_t> support(const std::vector<double>& p) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) out.push_back(static_cast<int32_t>(i));
  return out;
}

int32_t sample(const std::vector<float>& logits, const SampleRow& p) {
  std::vector<float> scratch(logits.size());
  return cpu::sample_row(logits.data(), static_cast<int64_t>(logits.size()), p, scratch.data());
}

// Softmax computed here in double, independently of the reference.
std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  double max = -INFINITY, sum = 0;
  for (float l : logits) max = std::max(max, l / temperature);
  for (float l : logits) sum += std::exp(l / temperature - max);
  std::vector<double> out;
  for (float l : logits) out.push_back(std::exp(l / temperature - max) / sum);
  return out;
}

void expect_probs(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "token " << i;
}

// ---- the shared arithmetic

TEST(SampleMath, PhiloxMatchesRandom123KnownAnswers) {
  // Random123's kat_vectors, philox4x32 10: counter, key, result.
  struct Kat {
    sm::Philox4x32 ctr;
    uint32_t k0, k1;
    sm::Philox4x32 want;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Kat& k : kats) {
    const sm::Philox4x32 got = sm::philox4x32_10(k.ctr, k.k0, k.k1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], k.want.v[i]) << "word " << i;
  }
}

TEST(SampleMath, UniformIsAFunctionOfSeedPositionAndDraw) {
  std::set<double> seen;
  double sum = 0;
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) {
    const double u = sm::uniform(42, static_cast<uint32_t>(i), 0);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    seen.insert(u);
    sum += u;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kN));
  EXPECT_NEAR(sum / kN, 0.5, 0.005);  // 5.5 standard deviations of the mean
  EXPECT_EQ(sm::uniform(7, 3, 0), sm::uniform(7, 3, 0));
  EXPECT_NE(sm::uniform(7, 3, 0), sm::uniform(8, 3, 0));
  EXPECT_NE(sm::uniform(7, 3, 0), sm::uniform(7, 4, 0));
  EXPECT_NE(sm::uniform(7, 3, 0), sm::uniform(7, 3, 1));
  EXPECT_NE(sm::uniform(uint64_t{1} << 32, 3, 0), sm::uniform(1, 3, 0));  // the seed's high word counts
}

TEST(SampleMath, ExpIsWithinAFewUlpsAndExactAtZero) {
  EXPECT_EQ(sm::exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(sm::weight(3.5f, 3.5f, 0.7f), 1.0f);
  EXPECT_EQ(sm::exp_nonpositive(-INFINITY), 0.0f);
  EXPECT_EQ(sm::exp_nonpositive(NAN), 0.0f);
  EXPECT_EQ(sm::exp_nonpositive(-87.5f), 0.0f);
  double worst = 0;
  for (float x = -87.0f; x <= 0.0f; x += 0.000731f) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(sm::exp_nonpositive(x) - want) / want);
  }
  // About one ulp (2^-23 = 1.2e-7 relative at the bottom of a binade); 9.8e-8 measured.
  EXPECT_LT(worst, 1.5e-7) << "worst relative error";
}

TEST(SampleMath, OrderKeysSortLikeFloats) {
  const std::vector<float> v = {-INFINITY, -3.5f, -1e-30f, -0.0f, 0.0f, 1e-30f, 2.0f, INFINITY};
  for (size_t i = 0; i + 1 < v.size(); ++i) EXPECT_LE(sm::order_key(v[i]), sm::order_key(v[i + 1])) << i;
  EXPECT_EQ(sm::order_key(-0.0f), sm::order_key(0.0f));
  for (float x : v) EXPECT_EQ(sm::key_value(sm::order_key(x)), x);
}

// ---- the filters

TEST(Sample, GreedyIsArgmaxLowestIdOnTies) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits(1000);
    for (float& l : logits) l = normal(gen);
    const auto want = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sample(logits, with(0.0f, 0, 1, 0, static_cast<uint64_t>(trial))), want);
    const auto p = probs(logits, with(0.0f));
    EXPECT_EQ(p[static_cast<size_t>(want)], 1.0);
  }
  const std::vector<float> tied = {0, 3, -1, 3, 3};
  EXPECT_EQ(sample(tied, with(0.0f)), 1);
  EXPECT_EQ(support(probs(tied, with(0.0f))), std::vector<int32_t>{1});
}

TEST(Sample, TopK1KeepsOnlyTheMaximum) {
  std::mt19937 gen(3);
  std::normal_distribution<float> normal;
  std::vector<float> logits(300);
  for (float& l : logits) l = normal(gen);
  const auto want = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  for (int i = 0; i < 200; ++i) ASSERT_EQ(sample(logits, with(1.5f, 1, 1, 0, 1, i)), want);
  EXPECT_EQ(support(probs(logits, with(1.5f, 1))), std::vector<int32_t>{want});
}

TEST(Sample, TemperatureScalesLogits) {
  const std::vector<float> logits = {1.0f, 2.0f, -0.5f, 0.0f};
  for (float t : {0.3f, 1.0f, 2.0f}) expect_probs(probs(logits, with(t)), softmax(logits, t));
}

TEST(Sample, TopKKeepsTheKLargestAndBoundaryTies) {
  const std::vector<float> logits = {1, 5, 3, 4, 2};
  const double e5 = std::exp(5.0), e4 = std::exp(4.0);
  expect_probs(probs(logits, with(1.0f, 2)), {0, e5 / (e5 + e4), 0, e4 / (e5 + e4), 0});
  // k=2 but the 2nd and 3rd largest tie: both stay, as in HF.
  const std::vector<float> tied = {5, 3, 3, 1};
  EXPECT_EQ(support(probs(tied, with(1.0f, 2))), (std::vector<int32_t>{0, 1, 2}));
  // k at least the vocabulary size: nothing is removed.
  EXPECT_EQ(support(probs(tied, with(1.0f, 9))), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(Sample, TopPKeepsTheSmallestSetReachingTheMass) {
  // Shuffled so the order of ids is not the order of probabilities.
  const auto logits = logits_of({0.15, 0.5, 0.05, 0.3});
  EXPECT_EQ(support(probs(logits, with(1.0f, 0, 0.4f))), std::vector<int32_t>{1});
  // 0.5 < 0.7 so the 0.3 token is needed; then 0.8 >= 0.7 stops.
  expect_probs(probs(logits, with(1.0f, 0, 0.7f)), {0, 0.5 / 0.8, 0, 0.3 / 0.8});
  EXPECT_EQ(support(probs(logits, with(1.0f, 0, 0.85f))), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(support(probs(logits, with(1.0f, 0, 1.0f))), (std::vector<int32_t>{0, 1, 2, 3}));
  // A tiny top_p still keeps the most probable token.
  EXPECT_EQ(support(probs(logits, with(1.0f, 0, 1e-9f))), std::vector<int32_t>{1});
}

TEST(Sample, TopPKeepsEveryTokenTiedWithTheCrossingOne) {
  // Weights e^2, e, e, 1: the mass passes 0.7 at the first e-token (0.79);
  // its twin stays too, whatever order a sort would have put them in.
  EXPECT_EQ(support(probs({2, 1, 1, 0}, with(1.0f, 0, 0.7f))), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(support(probs({1, 1, 1, 1}, with(1.0f, 0, 0.3f))), (std::vector<int32_t>{0, 1, 2, 3}));
}

// A large vocabulary exercises the widening partial sort; the reference here
// sorts every weight (sample_math::weight, the one definition of a weight).
TEST(Sample, TopPOnLargeVocabularyMatchesFullSort) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> logits(20000);
  for (float& l : logits) l = normal(gen);
  const float max = *std::max_element(logits.begin(), logits.end());
  const float inv_t = sm::reciprocal(0.8f);
  std::vector<float> w;
  for (float l : logits) w.push_back(sm::weight(l, max, inv_t));
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<float> sorted = w;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  for (float top_p : {0.01f, 0.3f, 0.9f, 0.999f}) {
    double mass = 0;
    float threshold = 0;
    for (float x : sorted) {
      mass += x;
      if (mass >= top_p * total) {
        threshold = x;
        break;
      }
    }
    std::vector<int32_t> want;
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i] >= threshold) want.push_back(static_cast<int32_t>(i));
    const auto got = probs(logits, with(0.8f, 0, top_p));
    EXPECT_EQ(support(got), want) << "top_p " << top_p;
    EXPECT_NEAR(std::accumulate(got.begin(), got.end(), 0.0), 1.0, 1e-9);
  }
}

// Both selection strategies (a heap for small k, a partition for large k)
// against a full sort.
TEST(Sample, TopKOnLargeVocabularyMatchesFullSort) {
  std::mt19937 gen(5);
  std::uniform_int_distribution<int> coarse(-300, 300);  // coarse values make ties common
  std::vector<float> logits(30000);
  for (float& l : logits) l = coarse(gen) * 0.01f;
  for (int k : {1, 20, 1000, 1500, 29999}) {
    std::vector<float> sorted = logits;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    std::vector<int32_t> want;
    for (size_t i = 0; i < logits.size(); ++i)
      if (logits[i] >= sorted[static_cast<size_t>(k - 1)]) want.push_back(static_cast<int32_t>(i));
    EXPECT_EQ(support(probs(logits, with(1.0f, k))), want) << "k " << k;
  }
}

TEST(Sample, MinPDropsTokensBelowFractionOfTop) {
  const auto logits = logits_of({0.15, 0.5, 0.05, 0.3});
  // Threshold 0.2 * 0.5 = 0.1: only the 0.05 token goes.
  expect_probs(probs(logits, with(1.0f, 0, 1.0f, 0.2f)), {0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95});
  // Threshold 0.35 drops the 0.3 token too.
  EXPECT_EQ(support(probs(logits, with(1.0f, 0, 1.0f, 0.7f))), std::vector<int32_t>{1});
}

TEST(Sample, FiltersRunInHuggingFaceOrder) {
  const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
  // top-k first: {0.4, 0.3} renormalised is {0.571, 0.429}; top-p 0.5 then
  // keeps one token. (top-p on the raw distribution would keep two.)
  EXPECT_EQ(support(probs(logits, with(1.0f, 2, 0.5f))), std::vector<int32_t>{0});
  // top-p before min-p: top-p 0.75 keeps {0.4, 0.3, 0.2}; min-p 0.3 then keeps
  // all three. (min-p first would drop 0.1, renormalise, and top-p would
  // then stop after two.)
  EXPECT_EQ(support(probs(logits, with(1.0f, 0, 0.75f, 0.3f))), (std::vector<int32_t>{0, 1, 2}));
}

TEST(Sample, MaskedLogitsAreNeverSampled) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {ninf, 0.0f, ninf, 0.0f};
  expect_probs(probs(logits, with(1.0f)), {0, 0.5, 0, 0.5});
  for (int i = 0; i < 100; ++i) {
    const int32_t t = sample(logits, with(1.0f, 0, 1, 0, 3, i));
    ASSERT_TRUE(t == 1 || t == 3) << t;
  }
}

TEST(Sample, TheTokenIsTheDrawOfItsPositionsUniform) {
  std::mt19937 gen(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(5000);
  for (float& l : logits) l = normal(gen);
  std::vector<float> w(logits.size());
  const SampleRow p = with(0.7f, 50, 0.9f, 0.01f, 77);
  ASSERT_TRUE(cpu::sample_weights(logits.data(), 5000, p, w.data()));
  for (int32_t pos = 0; pos < 300; ++pos) {
    SampleRow at = p;
    at.position = pos;
    ASSERT_EQ(sample(logits, at), cpu::draw(w.data(), 5000, sm::uniform(77, static_cast<uint32_t>(pos), 0))) << pos;
  }
}

TEST(Sample, SameSeedAndPositionSameTokenOtherwiseIndependent) {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i));
  auto run = [&](uint64_t seed) {
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(sample(logits, with(1.0f, 0, 1, 0, seed, i)));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sample, DrawWalksIdsInOrder) {
  const std::vector<float> w = {0, 2, 0, 0, 1, 0};
  EXPECT_EQ(cpu::draw(w.data(), 6, 0.0), 1);
  EXPECT_EQ(cpu::draw(w.data(), 6, 0.66), 1);
  EXPECT_EQ(cpu::draw(w.data(), 6, 0.67), 4);
  EXPECT_EQ(cpu::draw(w.data(), 6, 0.9999999), 4);
  const std::vector<float> none = {0, 0};
  EXPECT_EQ(cpu::draw(none.data(), 2, 0.5), -1);
}

TEST(Sample, UnsampleableRowsGiveMinusOne) {
  EXPECT_EQ(sample({0.0f, NAN}, with(1.0f)), -1);
  EXPECT_EQ(sample({0.0f, INFINITY}, with(1.0f)), -1);
  EXPECT_EQ(sample({-INFINITY, -INFINITY}, with(1.0f)), -1);
  EXPECT_EQ(sample({NAN, 1.0f}, with(0.0f)), -1);  // greedy too
  std::vector<float> w(1);
  EXPECT_FALSE(cpu::sample_weights(nullptr, 0, with(1.0f), w.data()));
}

// ---- Backend::accept on the CPU backend

constexpr int64_t kVocab = 5;

// Rows whose argmax is the given token (logit 2 there, 0 elsewhere).
std::vector<float> rows_with_argmax(const std::vector<int32_t>& tops) {
  std::vector<float> rows(tops.size() * kVocab, 0.0f);
  for (size_t i = 0; i < tops.size(); ++i) rows[i * kVocab + static_cast<size_t>(tops[i])] = 2.0f;
  return rows;
}

struct Verdict {
  int32_t accepted, bonus;
  std::vector<int32_t> tokens;
};

// One sequence [anchor, d1..dk] through the backend op; row i carries d_{i+1}.
Verdict accept(std::vector<float> logits, const std::vector<int32_t>& drafts, SampleRow p) {
  static const std::unique_ptr<Backend> cpu = make_cpu_backend();
  const auto n = static_cast<int64_t>(drafts.size()) + 1;
  std::vector<SampleRow> rows;
  for (int64_t i = 0; i < n; ++i) {
    p.position += i == 0 ? 0 : 1;
    p.draft = i < n - 1 ? drafts[static_cast<size_t>(i)] : -1;
    rows.push_back(p);
  }
  std::vector<int32_t> seq_start = {0, static_cast<int32_t>(n)}, tokens(static_cast<size_t>(n)), out(2);
  auto view = [](void* data, DType dt, int64_t r, int64_t c) { return Tensor{data, dt, Device::CPU, r, c, c}; };
  cpu->accept(view(logits.data(), DType::F32, n, kVocab), view(rows.data(), DType::I32, n, SampleRow::kWords),
              view(seq_start.data(), DType::I32, 2, 1), view(tokens.data(), DType::I32, n, 1),
              view(out.data(), DType::I32, 1, 2));
  return {out[0], out[1], tokens};
}

TEST(Accept, GreedyKeepsTheLongestMatchingPrefix) {
  Verdict a = accept(rows_with_argmax({3, 1, 4, 2}), {3, 1, 4}, with(0.0f));
  EXPECT_EQ(a.accepted, 3);
  EXPECT_EQ(a.bonus, 2);
  // Row 1 disagrees with d2; row 2 would agree with d3 but must not matter.
  a = accept(rows_with_argmax({3, 0, 4, 2}), {3, 1, 4}, with(0.0f));
  EXPECT_EQ(a.accepted, 1);
  EXPECT_EQ(a.bonus, 0);
  EXPECT_EQ(a.tokens, (std::vector<int32_t>{3, 0, 4, 2}));  // every row's own token
  a = accept(rows_with_argmax({2, 1, 4}), {3, 1}, with(0.0f));
  EXPECT_EQ(a.accepted, 0);
  EXPECT_EQ(a.bonus, 2);
  a = accept(rows_with_argmax({4}), {}, with(0.0f));  // no drafts: plain decoding
  EXPECT_EQ(a.accepted, 0);
  EXPECT_EQ(a.bonus, 4);
}

TEST(Accept, GreedyTiesGoToTheLowestId) {
  std::vector<float> rows(2 * kVocab, 0.0f);
  rows[1] = rows[3] = 1.0f;  // row 0: ids 1 and 3 tie
  EXPECT_EQ(accept(rows, {3}, with(0.0f)).accepted, 0);
  EXPECT_EQ(accept(rows, {1}, with(0.0f)).accepted, 1);
}

TEST(Accept, ImpossibleDraftIsAlwaysRejectedAndNeverTheBonus) {
  // top_k 2 leaves ids 0 and 1; the draft 4 has probability 0.
  const std::vector<float> rows = {3.0f, 2.5f, 0.0f, 0.0f, 1.0f, /*row 1*/ 0, 0, 0, 0, 0};
  for (int i = 0; i < 200; ++i) {
    const Verdict a = accept(rows, {4}, with(1.0f, 2, 1, 0, 5, 10 * i));
    ASSERT_EQ(a.accepted, 0);
    ASSERT_TRUE(a.bonus == 0 || a.bonus == 1) << a.bonus;
  }
}

TEST(Accept, CertainDraftIsAlwaysAccepted) {
  for (int i = 0; i < 100; ++i) {
    const Verdict a = accept(rows_with_argmax({2, 3, 0}), {2, 3}, with(1.0f, 1, 1, 0, 6, 10 * i));
    ASSERT_EQ(a.accepted, 2);
    ASSERT_EQ(a.bonus, 0);
  }
}

TEST(Accept, RejectionNeverReturnsTheRejectedDraft) {
  const std::vector<float> rows = {1.0f, 1.2f, 0.5f, 0.1f, 0.9f, /*row 1*/ 0, 0, 0, 0, 0};
  int rejected = 0, accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    const Verdict a = accept(rows, {1}, with(1.0f, 0, 1, 0, 99, 10 * i));
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

TEST(Accept, BadSequencesAreErrors) {
  static const std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::vector<float> logits = rows_with_argmax({1, 2});
  std::vector<SampleRow> rows(2, with(0.0f));
  std::vector<int32_t> tokens(2), out(2);
  auto view = [](void* data, DType dt, int64_t r, int64_t c) { return Tensor{data, dt, Device::CPU, r, c, c}; };
  for (std::vector<int32_t> seq_start : {std::vector<int32_t>{0, 3}, {1, 1}, {-1, 2}}) {
    EXPECT_THROW(cpu->accept(view(logits.data(), DType::F32, 2, kVocab), view(rows.data(), DType::I32, 2, 8),
                             view(seq_start.data(), DType::I32, 2, 1), view(tokens.data(), DType::I32, 2, 1),
                             view(out.data(), DType::I32, 1, 2)),
                 Error);
  }
}

}  // namespace
}  // namespace flashdraft::ops
