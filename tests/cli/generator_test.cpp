#include "engine/generator.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

// A "model" whose next token is always (last token + 1) mod vocab, with a
// clear margin, and which records everything it was fed.
class CountingModel : public NextTokenLogits {
 public:
  CountingModel(int vocab, int64_t limit) : vocab_(vocab), limit_(limit), logits_(vocab) {}

  std::span<const float> append(std::span<const int32_t> tokens) override {
    fed_.insert(fed_.end(), tokens.begin(), tokens.end());
    ++calls_;
    EXPECT_LE(static_cast<int64_t>(fed_.size()), limit_) << "fed past the context limit";
    std::fill(logits_.begin(), logits_.end(), 0.0f);
    logits_[(fed_.back() + 1) % vocab_] = 10.0f;
    return logits_;
  }
  int64_t context_limit() const override { return limit_; }

  const std::vector<int32_t>& fed() const { return fed_; }
  int calls() const { return calls_; }

 private:
  int vocab_;
  int64_t limit_;
  std::vector<float> logits_;
  std::vector<int32_t> fed_;
  int calls_ = 0;
};

SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  return p;
}

struct Seen {
  std::vector<int32_t> tokens;
  TokenSink sink() {
    return [this](int32_t t) {
      tokens.push_back(t);
      return true;
    };
  }
};

TEST(Generator, FeedsPromptOnceThenEachSampledTokenAndStopsAtMaxTokens) {
  CountingModel model(50, 100);
  Seen seen;
  std::vector<int32_t> prompt = {3, 9, 4};
  auto r = generate(model, prompt, greedy(5), {}, seen.sink());
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(seen.tokens, r.tokens);
  EXPECT_EQ(r.stop_reason, StopReason::kMaxTokens);
  EXPECT_EQ(r.prompt_tokens, 3);
  // The last sampled token is never fed: nothing would read its logits.
  EXPECT_EQ(model.fed(), (std::vector<int32_t>{3, 9, 4, 5, 6, 7, 8}));
  EXPECT_EQ(model.calls(), 5);
}

TEST(Generator, EosEndsGenerationAndIsNotPassedOn) {
  CountingModel model(50, 100);
  Seen seen;
  std::vector<int32_t> prompt = {1}, eos = {40, 4};
  auto r = generate(model, prompt, greedy(100), eos, seen.sink());
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{2, 3, 4}));
  EXPECT_EQ(seen.tokens, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(r.stop_reason, StopReason::kEos);
}

TEST(Generator, IgnoreEosKeepsGoingButStopTokenIdsStillStop) {
  CountingModel model(50, 100);
  Seen seen;
  std::vector<int32_t> prompt = {1}, eos = {4};
  SamplingParams p = greedy(100);
  p.ignore_eos = true;
  p.stop_token_ids = {7};
  auto r = generate(model, prompt, p, eos, seen.sink());
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(r.stop_reason, StopReason::kEos);
  EXPECT_EQ(seen.tokens, (std::vector<int32_t>{2, 3, 4, 5, 6}));
}

TEST(Generator, SinkReturningFalseStops) {
  CountingModel model(50, 100);
  std::vector<int32_t> prompt = {10};
  int calls = 0;
  auto r = generate(model, prompt, greedy(100), {}, [&](int32_t t) {
    ++calls;
    return t != 13;
  });
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{11, 12, 13}));
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r.stop_reason, StopReason::kStopString);
}

TEST(Generator, FillsTheContextButNeverOverflowsIt) {
  CountingModel model(50, 6);
  Seen seen;
  std::vector<int32_t> prompt = {1, 2, 3};
  auto r = generate(model, prompt, greedy(100), {}, seen.sink());
  // Prompt plus generated tokens add up to exactly the context length.
  EXPECT_EQ(r.tokens.size(), 3u);
  EXPECT_EQ(r.stop_reason, StopReason::kContextFull);
}

TEST(Generator, MaxTokensWinsWhenItCoincidesWithAFullContext) {
  CountingModel model(50, 6);
  std::vector<int32_t> prompt = {1, 2, 3};
  Seen seen;
  auto r = generate(model, prompt, greedy(3), {}, seen.sink());
  EXPECT_EQ(r.stop_reason, StopReason::kMaxTokens);
}

TEST(Generator, ZeroMaxTokensRunsNothing) {
  CountingModel model(50, 100);
  Seen seen;
  std::vector<int32_t> prompt = {1};
  auto r = generate(model, prompt, greedy(0), {}, seen.sink());
  EXPECT_TRUE(r.tokens.empty());
  EXPECT_EQ(model.calls(), 0);
}

TEST(Generator, RejectsEmptyAndOverlongPrompts) {
  CountingModel model(50, 4);
  Seen seen;
  EXPECT_THROW(generate(model, {}, greedy(5), {}, seen.sink()), flashdraft::Error);
  std::vector<int32_t> prompt = {1, 2, 3, 4};
  try {
    generate(model, prompt, greedy(5), {}, seen.sink());
    FAIL() << "expected an error";
  } catch (const flashdraft::Error& e) {
    EXPECT_NE(std::string(e.what()).find("4 tokens"), std::string::npos) << e.what();
  }
}

TEST(Generator, SameSeedSameSampledTokens) {
  // A flat distribution makes the draw depend only on the random stream.
  class Flat : public NextTokenLogits {
   public:
    std::span<const float> append(std::span<const int32_t>) override { return logits_; }
    int64_t context_limit() const override { return 1000; }
    std::vector<float> logits_ = std::vector<float>(64, 0.0f);
  };
  auto run = [](uint64_t seed) {
    Flat model;
    SamplingParams p;
    p.temperature = 1.0;
    p.seed = seed;
    p.max_tokens = 30;
    std::vector<int32_t> prompt = {0};
    return generate(model, prompt, p, {}, [](int32_t) { return true; }).tokens;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(Generator, ReportsSpeedsFromTheCountsItProduced) {
  GenerationResult r;
  r.prompt_tokens = 100;
  r.prefill_seconds = 0.5;
  r.tokens = {1, 2, 3, 4, 5};
  r.decode_seconds = 2.0;
  EXPECT_DOUBLE_EQ(r.prefill_tokens_per_second(), 200.0);
  EXPECT_DOUBLE_EQ(r.decode_tokens_per_second(), 2.0);  // 4 decoded tokens
  EXPECT_EQ(stop_reason_name(StopReason::kStopString), "stop_string");
}

}  // namespace
}  // namespace flashdraft::engine
