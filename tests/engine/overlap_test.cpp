// Overlapped scheduling (EngineConfig::overlap_scheduling, the default on a
// GPU; forced on here on the CPU) keeps what a serving loop relies on: every
// stop (EOS, stop string, max_tokens) truncates where it does with serial
// steps, with the same finish detail; a request that stops while the step
// launched behind its last one still runs it is reported at once and its
// record can be taken, its blocks freed when that step is read; an abort
// while a step in flight runs the request takes effect when that step is
// read; and every block comes back. Drafts are kept as with serial steps,
// whose drafter context is written after the step instead of inside it.
#include <gtest/gtest.h>

#include <map>

#include "shipped_models.h"

namespace flashdraft::engine::testing {
namespace {

EngineConfig config(bool overlap) {
  EngineConfig c;
  c.overlap_scheduling = overlap;
  c.max_running = 4;
  c.num_kv_blocks = humaneval_pool(4, 64);
  c.num_speculative_tokens = 7;
  c.eos_token_ids = shipped().eos;
  c.adaptive_speculation = false;
  return c;
}

struct Finished {
  std::vector<int32_t> tokens;
  FinishReason reason;
  StopReason stop;
  std::vector<int32_t> accepted;  // drafts kept by each verify step
};

// 16 prompts, a mix of max_tokens, EOS, and stop-string sinks that end a
// request after its n-th token; results taken as soon as a step reports
// them finished, as the server does.
std::map<size_t, Finished> serve(bool overlap, int64_t* followed = nullptr) {
  Engine engine(*shipped().target, &shipped().drafter("drafter-full"), config(overlap));
  const int64_t blocks = engine.free_kv_blocks();
  std::map<RequestId, size_t> which;
  for (size_t i = 0; i < 16; ++i) {
    SamplingParams p = greedy(i % 4 == 0 ? 1 + static_cast<int>(i) : 64);
    p.ignore_eos = i % 3 == 0;
    TokenSink sink;
    if (i % 4 == 2) {
      auto seen = std::make_shared<size_t>(0);
      sink = [seen, stop_at = 3 + 2 * i](int32_t) { return ++*seen < stop_at; };
    }
    which[engine.add(humaneval_prompts()[i].ids, p, std::move(sink))] = i;
  }
  std::map<size_t, Finished> out;
  while (engine.has_work()) {
    for (const StepOutput& o : engine.step()) {
      if (!o.finished) continue;
      std::optional<RequestResult> r = engine.take_result(o.id);
      EXPECT_TRUE(r.has_value());
      if (r) out[which.at(o.id)] = {r->tokens, r->reason, r->stop, r->accepted};
    }
  }
  EXPECT_EQ(engine.num_requests(), 0u);
  EXPECT_EQ(engine.free_kv_blocks(), blocks) << "blocks not given back";
  if (followed) *followed = engine.followed_steps();
  return out;
}

TEST(Overlap, StopsAndTakenResultsAsWithSerialSteps) {
  int64_t followed = 0;
  const auto serial = serve(false), overlapped = serve(true, &followed);
  EXPECT_GT(followed, 10);
  ASSERT_EQ(serial.size(), 16u);
  ASSERT_EQ(overlapped.size(), 16u);
  for (const auto& [i, want] : serial) {
    const Finished& got = overlapped.at(i);
    EXPECT_EQ(got.tokens, want.tokens) << "prompt " << i;
    EXPECT_EQ(got.reason, want.reason) << "prompt " << i;
    EXPECT_EQ(got.stop, want.stop) << "prompt " << i;
    // Overlapped steps write the drafter's context inside the step, as soon
    // as the target's taps are written (all rows); serial ones after it (the
    // kept rows): the same context, so the same drafts are kept.
    EXPECT_EQ(got.accepted, want.accepted) << "prompt " << i;
  }
}

TEST(Overlap, AbortInFlightTakesEffectWhenTheStepIsRead) {
  Engine engine(*shipped().target, &shipped().drafter("drafter-full"), config(true));
  const int64_t blocks = engine.free_kv_blocks();
  const RequestId victim = engine.add(humaneval_prompts()[3].ids, greedy(64));
  const RequestId other = engine.add(humaneval_prompts()[5].ids, greedy(64));
  while (engine.result(victim).tokens.size() < 8) engine.step();
  ASSERT_GT(engine.followed_steps(), 0);
  ASSERT_TRUE(engine.has_work());
  EXPECT_TRUE(engine.abort(victim));
  EXPECT_FALSE(engine.result(victim).finished);  // a step in flight still runs it
  const size_t emitted = engine.result(victim).tokens.size();
  bool reported = false;
  for (int s = 0; s < 3 && !reported; ++s) {
    const auto out = engine.step();
    for (const StepOutput& o : out)
      if (o.id == victim) {
        reported = o.finished;
        EXPECT_EQ(o.reason, FinishReason::Abort);
      }
  }
  EXPECT_TRUE(reported);
  const RequestResult r = engine.result(victim);
  EXPECT_EQ(r.reason, FinishReason::Abort);
  EXPECT_LE(r.tokens.size(), emitted + 16);  // at most the step being read when it was aborted
  while (engine.has_work()) engine.step();
  EXPECT_EQ(engine.free_kv_blocks(), blocks);

  // The other request is untouched: the tokens it emits alone.
  Engine alone(*shipped().target, &shipped().drafter("drafter-full"), config(false));
  const RequestId id = alone.add(humaneval_prompts()[5].ids, greedy(64));
  while (alone.has_work()) alone.step();
  EXPECT_EQ(engine.result(other).tokens, alone.result(id).tokens);
}

}  // namespace
}  // namespace flashdraft::engine::testing
