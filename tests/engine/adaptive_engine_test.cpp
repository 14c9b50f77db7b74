// Adaptive speculation in the engine, on the shipped pair: the calibrated
// engine stays lossless, a drafter whose drafts always fail is switched off,
// drafting that costs nothing runs at full length, and requests with their
// own setting keep it. Every case but the first runs on a cost model given
// outright, so the draft lengths do not depend on the clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <span>

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

// The drafter's proposals at a step are a function of the committed tokens
// alone, given a complete context: the drafts the target itself would get
// from a fresh drafter run over the whole context (draft_contiguous, fed by
// the target's taps of one forward over the committed tokens).
std::vector<int32_t> reference_drafts(std::span<const int32_t> committed) {
  auto& m = shipped();
  model::DFlashDrafter& drafter = m.drafter("drafter-full");
  auto cache = m.target->new_cache();
  std::vector<float> logits, draft_logits;
  const std::vector<int32_t> context(committed.begin(), committed.end() - 1);
  m.target->forward(context, cache, logits);
  const std::vector<float> taps = m.target->taps();
  const int64_t block = drafter.config().block_size;
  drafter.draft_contiguous(taps.data(), static_cast<int64_t>(context.size()), committed.back(), block, draft_logits);
  const auto vocab = static_cast<int64_t>(draft_logits.size()) / (block - 1);
  std::vector<int32_t> drafts;
  for (int64_t r = 0; r + 1 < block; ++r) {
    const float* row = draft_logits.data() + r * vocab;
    drafts.push_back(static_cast<int32_t>(std::max_element(row, row + vocab) - row));
  }
  return drafts;
}

// A request that stops drafting (its rows' drafter context set aside, prompt
// included, and written only before the next drafting step) drafts on
// resuming exactly what a complete context gives: every verify step's
// accepted count is the reference drafts' match with the greedy
// continuation. Its waiting rows are written at once, or (catch-up scratch
// for only max_rows rows) in writes of max_rows rows; with room for only
// max_rows waiting rows the context is also written whenever that fills.
TEST(AdaptiveEngine, ARequestThatStopsDraftingResumesFromACompleteContext) {
  constexpr int kTokens = 48;
  const std::pair<int64_t, int64_t> sizes[] = {
      {int64_t{128} << 20, int64_t{32} << 20}, {int64_t{128} << 20, 1}, {1, int64_t{32} << 20}};
  std::vector<int64_t> writes;
  for (const auto& [pending_bytes, catch_up_bytes] : sizes) {
    EngineConfig c = config(3, kTokens);
    // Cheaper drafter rows than cpu_like_costs': drafting pays on some
    // steps and not others (17 verify steps of 3 x 48 tokens, 9 of them
    // after a pause, the longest 16 steps).
    c.step_costs = cpu_like_costs();
    (*c.step_costs)[9] = 1.5e-3;   // drafter pass
    (*c.step_costs)[10] = 0.03e-3;  // drafter row
    c.max_tokens_per_step = 64;  // prompts span several chunks and several writes
    c.pending_context_bytes = pending_bytes;
    c.catch_up_bytes = catch_up_bytes;
    Engine engine(*shipped().target, &shipped().drafter("drafter-full"), c);
    const std::vector<Prompt> prompts(some_prompts().begin(), some_prompts().begin() + 3);
    std::vector<RequestId> ids;
    for (const Prompt& p : prompts) ids.push_back(engine.add(p.ids, greedy(kTokens)));
    struct Verify {
      size_t request;
      std::vector<int32_t> committed;  // prompt and output before the step
      int64_t drafts, accepted, idle_before;
    };
    std::vector<Verify> verifies;
    std::vector<int64_t> idle(ids.size(), 0);
    while (engine.has_work()) {
      std::vector<RequestResult> before;
      for (RequestId id : ids) before.push_back(engine.result(id));
      engine.step();
      for (size_t i = 0; i < ids.size(); ++i) {
        const RequestResult after = engine.result(ids[i]);
        if (after.accepted.size() > before[i].accepted.size()) {
          const auto& was = before[i].spec.draft_lengths();
          const auto& now = after.spec.draft_lengths();
          int64_t k = 0;
          for (size_t j = 0; j < now.size(); ++j)
            if (now[j] > (j < was.size() ? was[j] : 0)) k = static_cast<int64_t>(j);
          std::vector<int32_t> committed = prompts[i].ids;
          committed.insert(committed.end(), before[i].tokens.begin(), before[i].tokens.end());
          verifies.push_back({i, committed, k, after.accepted.back(), idle[i]});
          idle[i] = 0;
        } else if (after.tokens.size() > before[i].tokens.size()) {
          ++idle[i];  // the prefill's token, then plain decode steps
        }
      }
    }
    int64_t resumed = 0, longest_idle = 0;
    for (const Verify& v : verifies) {
      const std::vector<int32_t> drafts = reference_drafts(v.committed);
      const std::vector<int32_t>& out = engine.result(ids[v.request]).tokens;
      const size_t at = v.committed.size() - prompts[v.request].ids.size();  // continuation after the anchor
      int64_t matched = 0;
      while (matched < v.drafts && at + static_cast<size_t>(matched) < out.size() &&
             drafts[static_cast<size_t>(matched)] == out[at + static_cast<size_t>(matched)])
        ++matched;
      EXPECT_EQ(v.accepted, matched) << "request " << v.request << " at " << v.committed.size() << " tokens, "
                                     << v.drafts << " drafts after " << v.idle_before << " steps without";
      if (v.idle_before > 1) ++resumed;
      longest_idle = std::max(longest_idle, v.idle_before);
    }
    const ContextWrites& w = engine.context_writes();
    writes.push_back(w.writes);
    std::printf("pending %lld bytes, catch-up %lld bytes: %zu verify steps, %lld after a pause, longest pause "
                "%lld steps; context %lld rows in %lld writes; %s\n",
                static_cast<long long>(pending_bytes), static_cast<long long>(catch_up_bytes), verifies.size(),
                static_cast<long long>(resumed), static_cast<long long>(longest_idle),
                static_cast<long long>(w.rows), static_cast<long long>(w.writes), engine.stats().summary().c_str());
    EXPECT_GE(resumed, 3);
    EXPECT_GE(longest_idle, 8);  // a probe after a long pause, not only short gaps
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(engine.result(ids[i]).tokens, plain_outputs(kTokens)[i]) << i;
  }
  EXPECT_LT(writes[0], writes[1]);  // a catch-up is one write when its scratch allows
}

}  // namespace
}  // namespace flashdraft::engine::testing
