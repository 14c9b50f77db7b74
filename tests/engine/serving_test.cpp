// What a serving loop needs from the Engine: abort frees a request's KV
// blocks within one step (at once outside a step), a finished request's
// record is forgotten once taken, and every request finishes with exactly
// one of stop / length / abort, with the detail (EOS or stop string,
// max_tokens) beside it.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "shipped_models.h"

namespace flashdraft::engine::testing {
namespace {

EngineConfig small_config(int64_t running) {
  EngineConfig c;
  c.max_running = running;
  c.num_kv_blocks = 64;
  c.eos_token_ids = shipped().eos;
  c.adaptive_speculation = false;  // the tests wait for accepted drafts
  return c;
}

const std::vector<int32_t>& prompt(size_t i = 3) { return humaneval_prompts()[i].ids; }

// The step's output for `id`, if any.
std::optional<StepOutput> output_for(const std::vector<StepOutput>& outputs, RequestId id) {
  for (const auto& o : outputs)
    if (o.id == id) return o;
  return std::nullopt;
}

TEST(Serving, AbortOfARunningDFlashRequestFreesItsBlocksAtOnce) {
  Engine engine(*shipped().target, &shipped().drafter("drafter-full"), small_config(2));
  const int64_t initial = engine.free_kv_blocks();
  const RequestId running = engine.add(prompt(), greedy(200));
  const RequestId other = engine.add(prompt(5), greedy(8));
  // Prefill, then verify steps until the drafter has had accepted drafts.
  while (engine.result(running).accepted.empty()) engine.step();
  ASSERT_FALSE(engine.result(running).finished);
  const int64_t before = engine.free_kv_blocks();

  EXPECT_TRUE(engine.abort(running));
  EXPECT_GT(engine.free_kv_blocks(), before);
  const RequestResult r = engine.result(running);
  EXPECT_TRUE(r.finished);
  EXPECT_EQ(r.reason, FinishReason::Abort);
  EXPECT_FALSE(r.tokens.empty());       // what it emitted before the abort is kept
  EXPECT_FALSE(engine.abort(running));  // already finished
  EXPECT_FALSE(engine.abort(12345));    // unknown

  // The next step reports the abort, without tokens.
  const auto reported = output_for(engine.step(), running);
  ASSERT_TRUE(reported.has_value());
  EXPECT_TRUE(reported->finished);
  EXPECT_EQ(reported->reason, FinishReason::Abort);
  EXPECT_TRUE(reported->tokens.empty());

  while (engine.has_work()) engine.step();
  EXPECT_EQ(engine.result(other).reason, FinishReason::Length);
  EXPECT_EQ(engine.free_kv_blocks(), initial);
}

TEST(Serving, AbortOfAWaitingRequest) {
  Engine engine(*shipped().target, &shipped().drafter("drafter-swa"), small_config(1));
  const int64_t initial = engine.free_kv_blocks();
  const RequestId first = engine.add(prompt(), greedy(6));
  const RequestId waiting = engine.add(prompt(7), greedy(6));
  engine.step();
  EXPECT_EQ(engine.result(waiting).tokens.size(), 0u);
  EXPECT_TRUE(engine.abort(waiting));
  EXPECT_EQ(engine.result(waiting).reason, FinishReason::Abort);
  while (engine.has_work()) engine.step();
  EXPECT_EQ(engine.result(first).tokens.size(), 6u);
  EXPECT_TRUE(engine.result(waiting).tokens.empty());
  EXPECT_EQ(engine.free_kv_blocks(), initial);
}

TEST(Serving, AbortFromInsideAStepTakesEffectWhenTheStepEnds) {
  // Token sinks run inside a step; an abort there must not disturb the step
  // (its plan still points at the request) and must not read as a stop string.
  Engine engine(*shipped().target, &shipped().drafter("drafter-full"), small_config(2));
  const int64_t initial = engine.free_kv_blocks();
  RequestId self = -1, victim = -1;
  int seen = 0;
  victim = engine.add(prompt(5), greedy(200));
  self = engine.add(prompt(), greedy(200), [&](int32_t) {
    if (++seen == 3) {
      EXPECT_TRUE(engine.abort(self));
      EXPECT_TRUE(engine.abort(victim));
    }
    return true;  // no stop string
  });
  std::vector<StepOutput> outputs;
  while (seen < 3) outputs = engine.step();
  // Both were finished, and their blocks freed, by the end of that step.
  for (RequestId id : {self, victim}) {
    const auto o = output_for(outputs, id);
    ASSERT_TRUE(o.has_value());
    EXPECT_TRUE(o->finished);
    EXPECT_EQ(o->reason, FinishReason::Abort);
    EXPECT_EQ(engine.result(id).reason, FinishReason::Abort);
  }
  EXPECT_GE(engine.result(self).tokens.size(), 3u);
  EXPECT_FALSE(engine.has_work());
  EXPECT_EQ(engine.free_kv_blocks(), initial);
}

TEST(Serving, TakeResultForgetsTheRequest) {
  Engine engine(*shipped().target, nullptr, small_config(4));
  const RequestId id = engine.add(prompt(), greedy(5));
  EXPECT_FALSE(engine.take_result(id).has_value());  // still running: kept
  while (engine.has_work()) engine.step();
  const auto taken = engine.take_result(id);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->id, id);
  EXPECT_EQ(taken->tokens.size(), 5u);
  EXPECT_EQ(taken->reason, FinishReason::Length);
  EXPECT_FALSE(engine.take_result(id).has_value());
  EXPECT_THROW(engine.result(id), Error);
  EXPECT_FALSE(engine.abort(id));
  EXPECT_EQ(engine.num_requests(), 0u);

  // A loop that takes every result holds no more than the requests in flight.
  size_t most = 0;
  for (int round = 0; round < 12; ++round) {
    engine.add(prompt(static_cast<size_t>(round)), greedy(3));
    for (const auto& o : engine.step()) {
      if (o.finished) {
        ASSERT_TRUE(engine.take_result(o.id).has_value());
      }
    }
    most = std::max(most, engine.num_requests());
  }
  while (engine.has_work()) {
    for (const auto& o : engine.step()) {
      if (o.finished) {
        ASSERT_TRUE(engine.take_result(o.id).has_value());
      }
    }
  }
  EXPECT_LE(most, 4u);
  EXPECT_EQ(engine.num_requests(), 0u);
  EXPECT_EQ(engine.free_kv_blocks(), engine.num_kv_blocks());

  // An aborted request taken before the next step is not reported by it.
  const RequestId aborted = engine.add(prompt(), greedy(5));
  engine.step();
  ASSERT_TRUE(engine.abort(aborted));
  ASSERT_TRUE(engine.take_result(aborted).has_value());
  EXPECT_TRUE(engine.step().empty());
  EXPECT_FALSE(engine.has_work());
}

TEST(Serving, FinishReasons) {
  auto& drafter = shipped().drafter("drafter-full");
  std::vector<int32_t> full;
  {
    Engine engine(*shipped().target, &drafter, small_config(1));
    const RequestId id = engine.add(prompt(), greedy(20));
    while (engine.has_work()) engine.step();
    full = engine.result(id).tokens;
    ASSERT_EQ(full.size(), 20u);
  }
  EngineConfig c = small_config(8);
  c.eos_token_ids = {full[6]};  // a stand-in EOS id the model emits
  Engine engine(*shipped().target, &drafter, c);
  const RequestId eos = engine.add(prompt(), greedy(20));
  SamplingParams ignore = greedy(20);
  ignore.ignore_eos = true;
  const RequestId length = engine.add(prompt(), ignore);
  int sunk = 0;
  const RequestId stop_string = engine.add(prompt(), ignore, [&](int32_t) { return ++sunk < 4; });
  const RequestId zero = engine.add(prompt(), greedy(0));
  const RequestId aborted = engine.add(prompt(), ignore);
  engine.step();
  engine.abort(aborted);
  while (engine.has_work()) engine.step();

  struct Want {
    RequestId id;
    FinishReason reason;
    std::optional<StopReason> stop;
  };
  for (const Want& w :
       {Want{eos, FinishReason::Stop, StopReason::kEos}, Want{length, FinishReason::Length, StopReason::kMaxTokens},
        Want{stop_string, FinishReason::Stop, StopReason::kStopString},
        Want{zero, FinishReason::Length, StopReason::kMaxTokens}, Want{aborted, FinishReason::Abort, std::nullopt}}) {
    const RequestResult r = engine.result(w.id);
    EXPECT_TRUE(r.finished);
    EXPECT_EQ(r.reason, w.reason) << "request " << w.id << ": " << finish_reason_name(r.reason);
    if (w.stop) {
      EXPECT_EQ(r.stop, *w.stop) << "request " << w.id << ": " << stop_reason_name(r.stop);
    }
  }
  const auto first_eos = std::find(full.begin(), full.end(), full[6]);
  EXPECT_EQ(engine.result(eos).tokens, std::vector<int32_t>(full.begin(), first_eos + 1));
  EXPECT_EQ(engine.result(length).tokens, full);
  EXPECT_EQ(engine.result(stop_string).tokens, std::vector<int32_t>(full.begin(), full.begin() + 4));
  EXPECT_LT(engine.result(aborted).tokens.size(), full.size());
  EXPECT_STREQ(finish_reason_name(FinishReason::Error), "error");
}

}  // namespace
}  // namespace flashdraft::engine::testing
