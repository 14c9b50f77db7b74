// Adaptive speculation in the engine, on the shipped pair: the calibrated
// engine stays lossless, a drafter whose drafts always fail is switched off,
// drafting that costs nothing runs at full length, and requests with their
// own setting keep it. Every case but the first runs on a cost model given
// outright, so the draft lengths do not depend on the clock.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "cpu_like_costs.h"
#include "shipped_models.h"

namespace flashdraft::engine::testing {
namespace {

using Coefficients = StepCostModel::Coefficients;

const std::vector<Prompt>& some_prompts() {
  static const std::vector<Prompt> p(humaneval_prompts().begin(), humaneval_prompts().begin() + 12);
  return p;
}

const std::vector<std::vector<int32_t>>& plain_outputs(int max_tokens) {
  static std::map<int, std::vector<std::vector<int32_t>>> cache;
  auto& out = cache[max_tokens];
  if (out.empty()) {
    EngineConfig c;
    c.max_running = 12;
    c.num_kv_blocks = humaneval_pool(12, max_tokens);
    out = run_all(nullptr, c, some_prompts(), greedy(max_tokens)).tokens;
  }
  return out;
}

EngineConfig config(int64_t running, int max_tokens) {
  EngineConfig c;
  c.max_running = running;
  c.num_kv_blocks = humaneval_pool(running, max_tokens);
  return c;
}

int64_t steps(const SpecStats& s) {
  int64_t n = 0;
  for (int64_t v : s.draft_lengths()) n += v;
  return n;
}

TEST(AdaptiveEngine, CalibratedAtStartAndLossless) {
  constexpr int kTokens = 64;
  EngineConfig c = config(4, kTokens);
  Engine probe(*shipped().target, &shipped().drafter("drafter-full"), c);
  ASSERT_NE(probe.step_costs(), nullptr);
  std::printf("calibration: %lld steps in %.0f ms; %s\n", static_cast<long long>(probe.calibration().steps),
              probe.calibration().seconds * 1e3, probe.step_costs()->describe().c_str());
  EXPECT_GE(probe.calibration().steps, 5);
  // Calibration leaves the pool as it found it.
  EXPECT_EQ(probe.free_kv_blocks(), probe.num_kv_blocks());

  auto r = run_all(&shipped().drafter("drafter-full"), c, some_prompts(), greedy(kTokens));
  EXPECT_EQ(r.tokens, plain_outputs(kTokens));
  std::printf("calibrated, 4 at once: %s\n", r.stats.summary().c_str());
  // Every decode step reported a length: one per emitted token after the
  // first, less the drafts accepted.
  int64_t emitted = 0;
  for (const auto& t : r.tokens) emitted += static_cast<int64_t>(t.size()) - 1;
  EXPECT_EQ(steps(r.stats), emitted - r.stats.accepted_tokens());
}

// Random weights of the drafter's shapes: its drafts are all but always wrong.
model::DFlashDrafter& garbage_drafter() {
  static auto d = model::DFlashDrafter::load_dummy(models_dir() / "drafter-full", *shipped().target);
  return *d;
}

TEST(AdaptiveEngine, StopsDraftingWhenDraftsAreAlwaysRejected) {
  constexpr int kTokens = 48;
  EngineConfig c = config(4, kTokens);
  c.step_costs = cpu_like_costs();
  auto r = run_all(&garbage_drafter(), c, some_prompts(), greedy(kTokens));
  EXPECT_EQ(r.tokens, plain_outputs(kTokens));
  std::printf("garbage drafter, adaptive: %s\n", r.stats.summary().c_str());
  EXPECT_LT(r.stats.accepted_tokens(), r.stats.drafts() / 10 + 1);  // it really is garbage
  // Drafting stops after the first drafts fail and comes back only as the
  // occasional probe.
  EXPECT_GT(r.stats.draft_lengths()[0], 0.85 * static_cast<double>(steps(r.stats)));
  EXPECT_LT(r.stats.mean_draft_length(), 1.0);

  // The same engine with a fixed length drafts the whole block every step.
  c.adaptive_speculation = false;
  auto fixed = run_all(&garbage_drafter(), c, some_prompts(), greedy(kTokens));
  EXPECT_EQ(fixed.tokens, plain_outputs(kTokens));
  EXPECT_EQ(fixed.stats.draft_lengths().size(), 16u);
  EXPECT_EQ(fixed.stats.draft_lengths()[15], steps(fixed.stats));
}

TEST(AdaptiveEngine, DraftsTheWholeBlockWhenDraftingCostsNothing) {
  constexpr int kTokens = 64;
  EngineConfig c = config(4, kTokens);
  c.step_costs = StepCostModel::Coefficients{1e-3};  // a step costs 1 ms whatever it holds
  auto r = run_all(&shipped().drafter("drafter-full"), c, some_prompts(), greedy(kTokens));
  EXPECT_EQ(r.tokens, plain_outputs(kTokens));
  std::printf("free drafting: %s\n", r.stats.summary().c_str());
  // Every step drafts as much as the request can still use: 15 until the
  // last few tokens, 0 only when a single token is left.
  const auto& lengths = r.stats.draft_lengths();
  ASSERT_EQ(lengths.size(), 16u);
  EXPECT_LE(lengths[0], static_cast<int64_t>(some_prompts().size()));
  EXPECT_GT(lengths[15], steps(r.stats) / 2);
}

TEST(AdaptiveEngine, ARequestCanAskForTheFixedLength) {
  constexpr int kTokens = 32;
  EngineConfig c = config(4, kTokens);
  c.step_costs = cpu_like_costs();
  c.eos_token_ids = shipped().eos;
  Engine engine(*shipped().target, &garbage_drafter(), c);
  std::vector<RequestId> ids;
  for (size_t i = 0; i < some_prompts().size(); ++i) {
    SamplingParams p = greedy(kTokens);
    if (i % 2 == 1) p.adaptive_speculation = false;
    ids.push_back(engine.add(some_prompts()[i].ids, p));
  }
  while (engine.has_work()) engine.step();
  for (size_t i = 0; i < ids.size(); ++i) {
    const RequestResult r = engine.result(ids[i]);
    EXPECT_EQ(r.tokens, plain_outputs(kTokens)[i]) << i;
    const auto& lengths = r.spec.draft_lengths();
    if (i % 2 == 1) {
      ASSERT_EQ(lengths.size(), 16u) << i;
      EXPECT_EQ(lengths[15], steps(r.spec)) << i << ": a fixed-length request drafted less";
    } else {
      EXPECT_LT(r.spec.mean_draft_length(), 2.0) << i << ": " << r.spec.lengths_summary();
    }
  }
}

}  // namespace
}  // namespace flashdraft::engine::testing
