// Penalties, logit bias and log-probabilities on the shipped pair: DFlash
// must stay lossless with them. A verify row j decides the token after
// drafts d_1..d_j, so its penalties count those drafts as output
// (Backend::penalize); if they did not, an accepted run would be judged
// with a stale history and DFlash would diverge from plain decoding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "shipped_models.h"

namespace flashdraft::engine::testing {
namespace {

constexpr int kTokens = 40;

std::vector<Prompt> prompts() { return {humaneval_prompts().begin(), humaneval_prompts().begin() + 12}; }

EngineConfig config() {
  EngineConfig c;
  c.max_running = 6;
  c.num_kv_blocks = humaneval_pool(6, kTokens);
  c.adaptive_speculation = false;  // draft every step: every verify row's penalties are judged
  return c;
}

SamplingParams penalised(SamplingParams p) {
  // Mild, so that the drafter (which knows nothing of them) still gets
  // drafts accepted; strong enough to change what greedy writes.
  p.repetition_penalty = 1.1;
  p.frequency_penalty = 0.2;
  p.presence_penalty = 0.1;
  p.logit_bias = {{220, -1.0f}, {262, 0.5f}, {13, -100.0f}};  // " ", "  " (indents) nudged, "." banned
  return p;
}

void expect_greedy_lossless(const SamplingParams& p) {
  const RunResult plain = run_all(nullptr, config(), prompts(), p);
  // Not vacuous: the penalties change what plain greedy writes.
  const RunResult unpenalised = run_all(nullptr, config(), prompts(), greedy(kTokens));
  int changed = 0;
  for (size_t i = 0; i < plain.tokens.size(); ++i) changed += plain.tokens[i] != unpenalised.tokens[i];
  EXPECT_GE(changed, 6) << "the penalties hardly changed the output";
  for (const char* name : {"drafter-full", "drafter-swa"}) {
    const RunResult spec = run_all(&shipped().drafter(name), config(), prompts(), p);
    EXPECT_EQ(spec.tokens, plain.tokens) << name;
    std::printf("%s: %s\n", name, spec.stats.summary().c_str());
    EXPECT_GT(spec.stats.accepted_tokens(), 0) << name;
  }
}

TEST(PenaltyLossless, GreedyDFlashEqualsPlainWithPenalties) { expect_greedy_lossless(penalised(greedy(kTokens))); }

// Prompts that invite repeating one token: the drafter proposes runs of it,
// and only a penalty that counts each run's earlier drafts stops a verify
// block where plain decoding stops (the test above does not notice rows
// that ignore their drafts; this one does).
TEST(PenaltyLossless, RepetitiveRunsStopWhereThePlainOnesDo) {
  auto& tok = *shipped().tokenizer;
  std::vector<Prompt> runs;
  for (const char* text : {"0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", "a, a, a, a, a, a, a, a, a, a, a, a,",
                           "x = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,", "\n\n\n\n\n\n\n\n\n\n\n\n"})
    runs.push_back({text, tok.encode(text, false)});
  SamplingParams p = greedy(kTokens);
  p.frequency_penalty = 0.5;
  const RunResult plain = run_all(nullptr, config(), runs, p);
  for (const char* name : {"drafter-full", "drafter-swa"}) {
    const RunResult spec = run_all(&shipped().drafter(name), config(), runs, p);
    EXPECT_EQ(spec.tokens, plain.tokens) << name;
    EXPECT_GT(spec.stats.accepted_tokens(), 0) << name;
  }
}

TEST(PenaltyLossless, SeededDFlashSamplingEqualsPlainWithPenalties) {
  SamplingParams p;
  p.temperature = 0.8;
  p.top_p = 0.95;
  p.max_tokens = kTokens;
  p.seed = 99;
  p = penalised(p);
  const RunResult plain = run_all(nullptr, config(), prompts(), p);
  const RunResult spec = run_all(&shipped().drafter("drafter-full"), config(), prompts(), p);
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_GT(spec.stats.accepted_tokens(), 0);
}

// Log-probabilities are of the raw logits, one per emitted token, the same
// with and without the drafter; checked against a plain forward of the
// prompt plus the emitted tokens, position by position.
TEST(PenaltyLossless, LogprobsAreOfTheRawLogitsOfEachEmittedToken) {
  SamplingParams p = penalised(greedy(12));
  p.logprobs = 5;
  const std::vector<Prompt> few(humaneval_prompts().begin(), humaneval_prompts().begin() + 3);
  auto run = [&](model::DFlashDrafter* drafter) {
    EngineConfig c = config();
    c.eos_token_ids = shipped().eos;
    Engine engine(*shipped().target, drafter, c);
    std::vector<RequestId> ids;
    for (const Prompt& q : few) ids.push_back(engine.add(q.ids, p));
    std::vector<std::vector<TokenLogprobs>> streamed(ids.size());
    while (engine.has_work()) {
      for (const StepOutput& o : engine.step()) {
        EXPECT_EQ(o.logprobs.size(), o.tokens.size());
        auto& s = streamed[static_cast<size_t>(o.id - ids[0])];
        s.insert(s.end(), o.logprobs.begin(), o.logprobs.end());
      }
    }
    std::vector<RequestResult> out;
    for (size_t i = 0; i < ids.size(); ++i) {
      out.push_back(engine.result(ids[i]));
      EXPECT_EQ(out.back().logprobs.size(), streamed[i].size());
    }
    return out;
  };
  const auto plain = run(nullptr), spec = run(&shipped().drafter("drafter-full"));
  auto& target = *shipped().target;
  for (size_t i = 0; i < few.size(); ++i) {
    ASSERT_EQ(plain[i].tokens, spec[i].tokens);
    ASSERT_EQ(plain[i].logprobs.size(), plain[i].tokens.size());
    ASSERT_EQ(spec[i].logprobs.size(), spec[i].tokens.size());
    std::vector<int32_t> seq = few[i].ids;
    for (size_t t = 0; t < plain[i].tokens.size(); ++t) {
      const TokenLogprobs &a = plain[i].logprobs[t], &b = spec[i].logprobs[t];
      EXPECT_EQ(a.token, plain[i].tokens[t]);
      // The same logits up to the CPU GEMM's rounding, which depends on how
      // many rows a step verifies.
      EXPECT_NEAR(a.logprob, b.logprob, 1e-4) << i << " " << t;
      ASSERT_EQ(a.top.size(), 5u);
      for (size_t k = 0; k < 5; ++k) EXPECT_EQ(a.top[k].token, b.top[k].token);
      // Independently: log-softmax of a plain forward's last row.
      auto cache = target.new_cache();
      std::vector<float> logits;
      target.forward(seq, cache, logits);
      double m = -INFINITY, z = 0;
      for (float l : logits) m = std::max<double>(m, l);
      for (float l : logits) z += std::exp(l - m);
      EXPECT_NEAR(a.logprob, logits[static_cast<size_t>(a.token)] - m - std::log(z), 1e-3) << i << " " << t;
      EXPECT_NEAR(a.top[0].logprob, 0.0 - std::log(z), 1e-3);
      EXPECT_GE(a.top[0].logprob, a.top[4].logprob);
      seq.push_back(a.token);
    }
  }
}

}  // namespace
}  // namespace flashdraft::engine::testing
