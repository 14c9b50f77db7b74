// Speculative sampling is lossless: the first tokens emitted by the DFlash
// loop (sample the anchor, draft k argmax tokens, verify with
// accept_sampling, emit the accepted drafts and the bonus, repeat) follow
// exactly the distribution of plain sampling from the target.
//
// A toy target and drafter over a 4-token vocabulary stand in for models:
// both are fixed functions of the whole prefix, so the exact probability of
// every 3-token continuation is the product of the target's filtered
// conditionals (Sampler::probs). The drafter agrees with the target's top
// token only part of the time, so acceptances, rejections and
// zero-probability drafts all happen.
//
// False-alarm rate: chi-square goodness of fit at alpha = 1e-4 (the
// critical value from the Wilson-Hilferty approximation, as in
// sampler_statistics_test), so a correct implementation fails for about 1
// seed base in 10,000. Seeds are fixed, so the test is deterministic; they
// were not chosen to pass. Power: the same test rejects a subtly wrong rule
// (resampling from p without removing the rejected draft).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

#include "engine/acceptance.h"
#include "engine/sampler.h"

namespace flashdraft::engine {
namespace {

constexpr int kVocab = 4;
constexpr int kEmit = 3;    // tokens whose joint distribution is tested
constexpr int kDrafts = 3;  // speculative tokens per step
constexpr int kRuns = 200000;

double chi_square_critical(int df, double z) {
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}
constexpr double kZAlpha1e4 = 3.719;  // P(N(0,1) > 3.719) = 1e-4

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

uint64_t hash_prefix(const std::vector<int32_t>& prefix, uint64_t salt) {
  uint64_t h = salt;
  for (int32_t t : prefix) h = mix(h ^ static_cast<uint64_t>(t + 1) * 0x9e3779b97f4a7c15ULL);
  return h;
}

// Target logits after `prefix`: pseudo-random values in [-2, 2).
std::vector<float> target_logits(const std::vector<int32_t>& prefix) {
  std::vector<float> out(kVocab);
  uint64_t h = hash_prefix(prefix, 17);
  for (int v = 0; v < kVocab; ++v) {
    h = mix(h + static_cast<uint64_t>(v));
    out[static_cast<size_t>(v)] = static_cast<float>((h >> 11) * 0x1.0p-53 * 4.0 - 2.0);
  }
  return out;
}

// The drafter's argmax pick: the target's top token about half the time.
int32_t draft_token(const std::vector<int32_t>& prefix) {
  const uint64_t h = hash_prefix(prefix, 4242);
  if (h % 2 == 0) return argmax(target_logits(prefix));
  return static_cast<int32_t>((h >> 8) % kVocab);
}

SamplingParams target_params(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.9;
  p.top_k = 3;  // one token per row is impossible: drafts of probability 0 occur
  p.seed = seed;
  return p;
}

using AcceptRule = std::function<Acceptance(std::span<const float>, int64_t, std::span<const int32_t>, Sampler&)>;

struct LoopCounts {
  std::vector<int> outcomes = std::vector<int>(static_cast<size_t>(std::pow(kVocab, kEmit)), 0);
  int64_t accepted = 0, rejected = 0;
};

// One DFlash generation of kEmit tokens after `prompt`; returns them as a base-kVocab index.
int run_loop(const std::vector<int32_t>& prompt, Sampler& sampler, const AcceptRule& rule, LoopCounts& counts) {
  std::vector<int32_t> seq = prompt;
  std::vector<int32_t> out;
  int32_t anchor = sampler.sample(target_logits(seq));
  while (true) {
    out.push_back(anchor);
    if (static_cast<int>(out.size()) >= kEmit) break;
    seq.push_back(anchor);
    std::vector<int32_t> drafts, ctx = seq;
    for (int j = 0; j < kDrafts; ++j) {
      drafts.push_back(draft_token(ctx));
      ctx.push_back(drafts.back());
    }
    std::vector<float> rows;
    ctx = seq;
    for (int i = 0; i <= kDrafts; ++i) {
      const auto row = target_logits(ctx);
      rows.insert(rows.end(), row.begin(), row.end());
      if (i < kDrafts) ctx.push_back(drafts[static_cast<size_t>(i)]);
    }
    Acceptance a = rule(rows, kVocab, drafts, sampler);
    counts.accepted += a.accepted;
    counts.rejected += a.accepted < kDrafts;
    for (int i = 0; i < a.accepted && static_cast<int>(out.size()) < kEmit; ++i) {
      out.push_back(drafts[static_cast<size_t>(i)]);
      seq.push_back(drafts[static_cast<size_t>(i)]);
    }
    if (static_cast<int>(out.size()) >= kEmit) break;
    anchor = a.bonus;
  }
  int index = 0;
  for (int i = 0; i < kEmit; ++i) index = index * kVocab + out[static_cast<size_t>(i)];
  return index;
}

// Exact probability of each kEmit-token continuation under plain sampling.
std::vector<double> exact_distribution(const std::vector<int32_t>& prompt) {
  Sampler probe(target_params(1));
  std::vector<double> p(static_cast<size_t>(std::pow(kVocab, kEmit)), 0.0);
  for (size_t index = 0; index < p.size(); ++index) {
    std::vector<int32_t> seq = prompt;
    double prob = 1.0;
    size_t rest = index;
    std::vector<int32_t> tokens(kEmit);
    for (int i = kEmit - 1; i >= 0; --i) {
      tokens[static_cast<size_t>(i)] = static_cast<int32_t>(rest % kVocab);
      rest /= kVocab;
    }
    for (int32_t t : tokens) {
      prob *= probe.probs(target_logits(seq))[static_cast<size_t>(t)];
      seq.push_back(t);
    }
    p[index] = prob;
  }
  return p;
}

double chi_square(const LoopCounts& c, const std::vector<double>& expected, int* support) {
  double chi2 = 0;
  *support = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] <= 0) {
      if (c.outcomes[i] > 0) return INFINITY;  // an impossible continuation was emitted
      continue;
    }
    ++*support;
    const double e = expected[i] * kRuns;
    chi2 += (c.outcomes[i] - e) * (c.outcomes[i] - e) / e;
  }
  return chi2;
}

LoopCounts simulate(const std::vector<int32_t>& prompt, const AcceptRule& rule, uint64_t seed_base) {
  LoopCounts counts;
  for (int r = 0; r < kRuns; ++r) {
    Sampler sampler(target_params(seed_base + static_cast<uint64_t>(r)));
    ++counts.outcomes[static_cast<size_t>(run_loop(prompt, sampler, rule, counts))];
  }
  return counts;
}

// Wrong on purpose: after a rejection it samples from p with the rejected
// draft still in it, which over-weights drafted tokens.
Acceptance accept_without_removal(std::span<const float> rows, int64_t vocab, std::span<const int32_t> drafts,
                                  Sampler& sampler) {
  for (size_t i = 0; i < drafts.size(); ++i) {
    auto row = rows.subspan(i * static_cast<size_t>(vocab), static_cast<size_t>(vocab));
    std::vector<float> p = sampler.probs(row);
    if (sampler.uniform() < p[static_cast<size_t>(drafts[i])]) continue;
    return {static_cast<int32_t>(i), sampler.sample_from_probs(p)};
  }
  return {static_cast<int32_t>(drafts.size()),
          sampler.sample(rows.subspan(drafts.size() * static_cast<size_t>(vocab)))};
}

TEST(AcceptanceStatistics, SpeculativeSamplingMatchesPlainSampling) {
  const std::vector<int32_t> prompt = {2, 0, 3};
  const std::vector<double> expected = exact_distribution(prompt);

  LoopCounts spec = simulate(prompt, accept_sampling, 1'000'000);
  int support = 0;
  const double chi2 = chi_square(spec, expected, &support);
  ASSERT_GE(support, 8);
  const double critical = chi_square_critical(support - 1, kZAlpha1e4);
  EXPECT_LT(chi2, critical) << "df " << support - 1;
  // Both branches of the rule were exercised.
  EXPECT_GT(spec.accepted, kRuns / 10);
  EXPECT_GT(spec.rejected, kRuns / 10);

  // Power: the test notices a rule that forgets to remove the rejected draft.
  LoopCounts wrong = simulate(prompt, accept_without_removal, 1'000'000);
  int wrong_support = 0;
  const double chi2_wrong = chi_square(wrong, expected, &wrong_support);
  EXPECT_GT(chi2_wrong, critical);
  std::printf("chi-square %.1f (correct rule), %.1f (wrong rule), critical %.1f at df %d\n", chi2, chi2_wrong, critical,
              support - 1);
}

}  // namespace
}  // namespace flashdraft::engine
