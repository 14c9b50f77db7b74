// Speculative sampling on the shipped pair is lossless: with a fixed prompt
// and many seeds, the first three tokens the engine emits with a DFlash
// drafter follow the target's own sampling distribution, computed exactly
// from the target (per-request forward, ops::cpu::sample_weights) for every
// possible 3-token continuation.
//
// Test: chi-square goodness of fit; outcomes expected fewer than 5 times are
// pooled into one cell. False-alarm rate: the critical value is the
// chi-square quantile at alpha = 1e-4 (Wilson-Hilferty), so a correct engine
// fails about once in 10,000 seed bases; the seed base is fixed (not chosen
// to pass), so the test is deterministic. The statistic's power against a
// wrong acceptance rule is shown in acceptance_statistics_test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "ops/cpu/sampling.h"
#include "shipped_models.h"
#include "test_support/chi_square.h"

namespace flashdraft::engine::testing {
namespace {

using ::flashdraft::testing::chi_square_critical;
using ::flashdraft::testing::kZAlpha1e4;
using ::flashdraft::testing::pooled_chi_square;

constexpr int kEmit = 3;
constexpr int kRuns = 4000;

SamplingParams params(uint64_t seed) {
  SamplingParams p;
  p.temperature = 1.0;
  p.top_k = 3;  // keeps the outcome space small enough to count (at most 27)
  p.max_tokens = kEmit;
  p.seed = seed;
  return p;
}

// Exact probability of every kEmit-token continuation with nonzero mass.
std::map<std::vector<int32_t>, double> exact(const std::vector<int32_t>& prompt) {
  auto& target = *shipped().target;
  ops::SampleRow probe;  // params(): what the engine asks the sample op for
  probe.temperature = 1.0f;
  probe.top_k = 3;
  std::map<std::vector<int32_t>, double> out;
  std::function<void(std::vector<int32_t>, double)> expand = [&](std::vector<int32_t> seq, double prob) {
    if (seq.size() == prompt.size() + kEmit) {
      out[std::vector<int32_t>(seq.begin() + static_cast<long>(prompt.size()), seq.end())] = prob;
      return;
    }
    auto cache = target.new_cache();
    std::vector<float> logits;
    target.forward(seq, cache, logits);
    std::vector<float> w(logits.size());
    ASSERT_TRUE(ops::cpu::sample_weights(logits.data(), static_cast<int64_t>(logits.size()), probe, w.data()));
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    for (size_t t = 0; t < w.size(); ++t) {
      if (w[t] <= 0) continue;
      auto next = seq;
      next.push_back(static_cast<int32_t>(t));
      expand(next, prob * w[t] / total);
    }
  };
  expand(prompt, 1.0);
  return out;
}

TEST(SamplingLossless, FirstTokensFollowTheTargetDistribution) {
  const std::vector<int32_t> prompt = shipped().tokenizer->encode("def add(a, b):\n    ", false);
  const auto expected = exact(prompt);
  ASSERT_GE(expected.size(), 9u);

  EngineConfig c;
  c.max_running = 64;
  c.max_tokens_per_step = 2048;
  c.num_speculative_tokens = 3;
  c.adaptive_speculation = false;  // every request drafts 3 (the statistic is over drafts)
  c.num_kv_blocks = 64 * 2;
  c.eos_token_ids = shipped().eos;
  Engine engine(*shipped().target, &shipped().drafter("drafter-full"), c);
  std::vector<RequestId> ids;
  for (int r = 0; r < kRuns; ++r) ids.push_back(engine.add(prompt, params(7'000'000 + static_cast<uint64_t>(r))));
  while (engine.has_work()) engine.step();

  std::map<std::vector<int32_t>, int> counts;
  for (RequestId id : ids) {
    auto r = engine.result(id);
    ASSERT_EQ(r.tokens.size(), static_cast<size_t>(kEmit));  // no EOS this early in this prompt's support
    ++counts[r.tokens];
  }
  // Pool the rare outcomes, then chi-square.
  const auto [chi2, cells] = pooled_chi_square(expected, counts, kRuns);
  for (const auto& [seq, n] : counts) EXPECT_TRUE(expected.count(seq)) << "impossible continuation emitted";
  ASSERT_GE(cells, 5);
  const double critical = chi_square_critical(cells - 1, kZAlpha1e4);
  std::printf("chi-square %.1f, critical %.1f at df %d; %s\n", chi2, critical, cells - 1,
              engine.stats().summary().c_str());
  EXPECT_LT(chi2, critical);
  // The drafts were really judged both ways.
  const auto& s = engine.stats();
  EXPECT_GT(s.accepted_tokens(), s.drafts() / 10);
  EXPECT_LT(s.accepted_tokens(), s.draft_tokens() * 9 / 10);
}

// Each request samples from its own seeded stream, so its output depends on
// its seed only, not on which requests share its steps.
TEST(SamplingLossless, SeededOutputDoesNotDependOnConcurrency) {
  const std::vector<Prompt> prompts(humaneval_prompts().begin(), humaneval_prompts().begin() + 12);
  auto run = [&](int64_t running) {
    EngineConfig c;
    c.max_running = running;
    c.num_kv_blocks = running * 32;
    c.eos_token_ids = shipped().eos;
    Engine engine(*shipped().target, &shipped().drafter("drafter-swa"), c);
    std::vector<RequestId> ids;
    for (size_t i = 0; i < prompts.size(); ++i) {
      SamplingParams p;
      p.temperature = 0.8;
      p.top_p = 0.95;
      p.max_tokens = 48;
      p.seed = 100 + i;
      ids.push_back(engine.add(prompts[i].ids, p));
    }
    while (engine.has_work()) engine.step();
    std::vector<std::vector<int32_t>> out;
    for (RequestId id : ids) out.push_back(engine.result(id).tokens);
    return out;
  };
  const auto alone = run(1), together = run(6);
  EXPECT_EQ(alone, together);
}

// One uniform per position (ops::sample_math::uniform) couples DFlash's
// acceptance with plain sampling: with the same seeds, DFlash sampling emits
// the very tokens plain sampling does, as greedy DFlash emits plain greedy's,
// given that a position's logits do not depend on the step that computes
// them (the CPU backend's matmul and attention are batch invariant).
TEST(SamplingLossless, DFlashSamplingEmitsPlainSamplingsTokens) {
  const std::vector<Prompt> prompts(humaneval_prompts().begin(), humaneval_prompts().begin() + 24);
  EngineConfig c;
  c.max_running = 8;
  c.num_kv_blocks = humaneval_pool(8, 64);
  c.adaptive_speculation = false;  // drafts every step, so many are judged
  SamplingParams p;
  p.temperature = 0.8;
  p.top_k = 50;
  p.top_p = 0.95;
  p.max_tokens = 64;
  p.seed = 2026;
  const RunResult plain = run_all(nullptr, c, prompts, p);
  for (const char* name : {"drafter-full", "drafter-swa"}) {
    const RunResult spec = run_all(&shipped().drafter(name), c, prompts, p);
    EXPECT_EQ(spec.tokens, plain.tokens) << name;
    std::printf("%s: %s\n", name, spec.stats.summary().c_str());
    EXPECT_GT(spec.stats.accepted_tokens(), 0) << name;
  }
}

}  // namespace
}  // namespace flashdraft::engine::testing
