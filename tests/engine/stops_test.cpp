// Stops that fall inside an accepted run of drafts truncate exactly there:
// for every cut point j of a DFlash greedy continuation, a stop token, a
// stop-string sink and max_tokens at token j each leave exactly tokens
// [0, j] of the uncut output (the same as plain decoding), whether or not
// j ended a verify step.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "shipped_models.h"

namespace flashdraft::engine::testing {
namespace {

constexpr int kTokens = 40;

struct Outcome {
  std::vector<int32_t> tokens;
  StopReason reason;
};

Outcome run_one(model::DFlashDrafter* drafter, const std::vector<int32_t>& prompt, const SamplingParams& params,
                TokenSink sink = {}) {
  EngineConfig c;
  c.max_running = 1;
  c.num_kv_blocks = 64;
  c.eos_token_ids = shipped().eos;
  c.adaptive_speculation = false;  // stops inside accepted drafts need drafts every step
  Engine engine(*shipped().target, drafter, c);
  const RequestId id = engine.add(prompt, params, std::move(sink));
  while (engine.has_work()) engine.step();
  RequestResult r = engine.result(id);
  EXPECT_TRUE(r.finished);
  EXPECT_EQ(r.reason, finish_reason_of(r.stop));
  return {r.tokens, r.stop};
}

TEST(Stops, TruncateExactlyInsideAcceptedRuns) {
  const auto& prompt = humaneval_prompts()[3].ids;
  auto& drafter = shipped().drafter("drafter-full");
  const Outcome full = run_one(&drafter, prompt, greedy(kTokens));
  ASSERT_EQ(full.tokens.size(), static_cast<size_t>(kTokens));
  ASSERT_EQ(run_one(nullptr, prompt, greedy(kTokens)).tokens, full.tokens);

  // Every cut variant is its own request; they run side by side in one engine.
  EngineConfig c;
  c.max_running = 16;
  c.num_kv_blocks = 16 * 16;
  c.eos_token_ids = shipped().eos;
  c.adaptive_speculation = false;  // stops inside accepted drafts need drafts every step
  Engine engine(*shipped().target, &drafter, c);
  struct Cut {
    RequestId id;
    int j;
    StopReason reason;
  };
  std::vector<Cut> cuts;
  std::vector<std::unique_ptr<int>> seen;
  for (int j = 0; j < kTokens - 1; ++j) {
    cuts.push_back({engine.add(prompt, greedy(j + 1)), j, StopReason::kMaxTokens});
    seen.push_back(std::make_unique<int>(0));
    int* counter = seen.back().get();
    cuts.push_back({engine.add(prompt, greedy(kTokens), [counter, j](int32_t) { return ++*counter <= j; }), j,
                    StopReason::kStopString});
    // A stop token only stops at its first occurrence.
    const int32_t t = full.tokens[static_cast<size_t>(j)];
    if (std::find(full.tokens.begin(), full.tokens.begin() + j, t) == full.tokens.begin() + j) {
      SamplingParams stop = greedy(kTokens);
      stop.stop_token_ids = {t};
      cuts.push_back({engine.add(prompt, stop), j, StopReason::kEos});
    }
  }
  const RequestId uncut = engine.add(prompt, greedy(kTokens));
  int inside_runs = 0;
  while (engine.has_work()) {
    for (const auto& o : engine.step()) {
      if (o.id == uncut && o.tokens.size() > 1) inside_runs += static_cast<int>(o.tokens.size()) - 1;
    }
  }
  for (const Cut& cut : cuts) {
    const std::vector<int32_t> want(full.tokens.begin(), full.tokens.begin() + cut.j + 1);
    RequestResult r = engine.result(cut.id);
    EXPECT_EQ(r.tokens, want) << "cut at " << cut.j << ", reason " << stop_reason_name(cut.reason);
    EXPECT_EQ(r.stop, cut.reason) << "cut at " << cut.j;
    EXPECT_EQ(r.reason, cut.reason == StopReason::kMaxTokens ? FinishReason::Length : FinishReason::Stop);
  }
  // The cut points did fall inside runs: the uncut request had multi-token steps.
  EXPECT_EQ(engine.result(uncut).tokens, full.tokens);
  EXPECT_GT(inside_runs, kTokens / 3);
}

TEST(Stops, EosEndsTheRequestUnlessIgnored) {
  // The model's own EOS ids (EngineConfig::eos_token_ids) end a request at the
  // first one emitted, and that id is the last token; ignore_eos runs on to
  // max_tokens. Use the uncut run's 5th token as a stand-in EOS id.
  const auto& prompt = humaneval_prompts()[3].ids;
  auto& drafter = shipped().drafter("drafter-full");
  const Outcome full = run_one(&drafter, prompt, greedy(kTokens));
  const int32_t eos = full.tokens[4];
  const auto first = std::find(full.tokens.begin(), full.tokens.end(), eos);
  const std::vector<int32_t> want(full.tokens.begin(), first + 1);

  EngineConfig c;
  c.num_kv_blocks = 64;
  c.eos_token_ids = {eos};
  c.adaptive_speculation = false;  // stops inside accepted drafts need drafts every step
  for (model::DFlashDrafter* d : {static_cast<model::DFlashDrafter*>(nullptr), &drafter}) {
    Engine engine(*shipped().target, d, c);
    const RequestId stopped = engine.add(prompt, greedy(kTokens));
    SamplingParams ignore = greedy(kTokens);
    ignore.ignore_eos = true;
    const RequestId ignored = engine.add(prompt, ignore);
    while (engine.has_work()) engine.step();
    EXPECT_EQ(engine.result(stopped).tokens, want) << (d ? "dflash" : "plain");
    EXPECT_EQ(engine.result(stopped).stop, StopReason::kEos);
    EXPECT_EQ(engine.result(stopped).reason, FinishReason::Stop);
    EXPECT_EQ(engine.result(ignored).tokens, full.tokens) << (d ? "dflash" : "plain");
    EXPECT_EQ(engine.result(ignored).stop, StopReason::kMaxTokens);
    EXPECT_EQ(engine.result(ignored).reason, FinishReason::Length);
  }
}

TEST(Stops, EmptyPromptAndFullContextAreErrors) {
  EngineConfig c;
  c.num_kv_blocks = 64;
  Engine engine(*shipped().target, &shipped().drafter("drafter-full"), c);
  EXPECT_THROW(engine.add({}, greedy(4)), Error);
  std::vector<int32_t> too_long(static_cast<size_t>(engine.context_limit()), 5);
  EXPECT_THROW(engine.add(too_long, greedy(4)), Error);
  EXPECT_THROW(engine.add({1, 2, 999999}, greedy(4)), Error);
}

TEST(Stops, NumSpeculativeTokensIsCheckedAgainstTheBlockSize) {
  auto& drafter = shipped().drafter("drafter-full");
  EngineConfig c;
  c.num_kv_blocks = 64;
  c.num_speculative_tokens = drafter.config().block_size;
  try {
    Engine engine(*shipped().target, &drafter, c);
    ADD_FAILURE() << "accepted num_speculative_tokens = block_size";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block_size"), std::string::npos) << e.what();
  }
  c.num_speculative_tokens = 3;
  EXPECT_THROW(Engine(*shipped().target, nullptr, c), Error);  // drafting needs a drafter
  Engine ok(*shipped().target, &drafter, c);
  EXPECT_EQ(ok.num_speculative_tokens(), 3);
}

TEST(Stops, TargetTapsOnlyWithADrafter) {
  auto& target = *shipped().target;
  EngineConfig c;
  c.num_kv_blocks = 64;
  {
    Engine with(target, &shipped().drafter("drafter-swa"), c);
    EXPECT_EQ(target.tap_layers(), shipped().drafter("drafter-swa").config().target_layer_ids);
  }
  Engine plain(target, nullptr, c);
  EXPECT_TRUE(target.tap_layers().empty());
}

}  // namespace
}  // namespace flashdraft::engine::testing
