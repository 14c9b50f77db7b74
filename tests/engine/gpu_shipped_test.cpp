// The shipped model pair on the CUDA backend (bf16) against the CPU reference
// backend (fp32): logits of the target and of both drafters within bf16
// bounds; greedy DFlash output identical to plain greedy output on the GPU
// for all 164 HumanEval prompts, both drafters, one request at a time and 8
// at once; and how many prompts' greedy outputs agree exactly between CPU
// and GPU; seeded sampling on the GPU: independent of the batch, DFlash's
// tokens equal to plain sampling's, and distributed as the CPU reference
// says; graphs against eager launches and overlapped scheduling against
// serial steps: the same tokens. Every test reports SKIPPED on a machine
// without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>

#include "ops/backend_factory.h"
#include "ops/cpu/sampling.h"
#include "shipped_models.h"
#include "test_support/chi_square.h"

namespace flashdraft::engine::testing {
namespace {

constexpr int kNewTokens = 128;

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ops::cuda_available()) GTEST_SKIP() << "no CUDA GPU here (or a build without CUDA)";
  }
};

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

int64_t pool_for(int64_t running) { return humaneval_pool(running, kNewTokens); }

std::vector<std::vector<int32_t>> plain_greedy(const std::string& device) {
  EngineConfig c;
  c.max_running = 32;
  c.max_tokens_per_step = 2048;
  c.num_kv_blocks = pool_for(32);
  return run_all(nullptr, c, humaneval_prompts(), greedy(kNewTokens), &shipped(device)).tokens;
}

const std::vector<std::vector<int32_t>>& gpu_plain() {
  static const auto tokens = plain_greedy("cuda");
  return tokens;
}

// bf16 weights and activations against fp32: a relative L2 error of a few
// 1e-3 per layer, compounding over 6 layers; 3e-2 still rejects any real bug
// (a wrong mask, tap or RoPE moves logits by O(1)).
constexpr double kLogitBound = 3e-2;

TEST_F(Gpu, TargetLogitsMatchCpu) {
  const auto& ids = humaneval_prompts()[0].ids;
  std::vector<float> cpu, gpu;
  auto cache_cpu = shipped("cpu").target->new_cache();
  shipped("cpu").target->forward(ids, cache_cpu, cpu, /*all_logits=*/true);
  auto cache_gpu = shipped("cuda").target->new_cache();
  shipped("cuda").target->forward(ids, cache_gpu, gpu, /*all_logits=*/true);
  const double err = rel_l2(gpu, cpu);
  std::printf("[gpu parity] target, %zu-token prompt, every row's logits: relative L2 %.3e\n", ids.size(), err);
  EXPECT_LT(err, kLogitBound);
}

TEST_F(Gpu, DrafterLogitsMatchCpu) {
  const auto& ids = humaneval_prompts()[1].ids;
  auto& cpu_models = shipped("cpu");
  cpu_models.target->set_tap_layers(cpu_models.full->config().target_layer_ids);
  std::vector<float> logits;
  auto cache = cpu_models.target->new_cache();
  cpu_models.target->forward(ids, cache, logits);
  const std::vector<float> taps = cpu_models.target->taps();  // the same context features for both backends
  cpu_models.target->set_tap_layers({});
  // drafter-full-fp8: the same drafter rounded to fp8 on both backends (the
  // GPU's 16-row calls reading its fp8 codes).
  for (const std::string name : {"drafter-full", "drafter-swa", "drafter-full-fp8"}) {
    std::vector<float> cpu, gpu;
    const auto n = static_cast<int64_t>(ids.size());
    cpu_models.drafter(name).draft_contiguous(taps.data(), n, ids.back(), 16, cpu);
    shipped("cuda").drafter(name).draft_contiguous(taps.data(), n, ids.back(), 16, gpu);
    const double err = rel_l2(gpu, cpu);
    std::printf("[gpu parity] %s, %lld context rows, 16-row block: relative L2 %.3e\n", name.c_str(),
                static_cast<long long>(n), err);
    EXPECT_LT(err, kLogitBound) << name;
  }
}

struct Mode {
  const char* drafter;
  int64_t running;
};

void PrintTo(const Mode& m, std::ostream* os) { *os << (m.drafter ? m.drafter : "plain") << " x" << m.running; }

class GpuLossless : public Gpu, public ::testing::WithParamInterface<Mode> {};

TEST_P(GpuLossless, DFlashGreedyEqualsPlainGreedy) {
  const Mode m = GetParam();
  EngineConfig c;
  c.max_running = m.running;
  c.num_kv_blocks = pool_for(m.running);
  auto& models = shipped("cuda");
  const auto got = run_all(&models.drafter(m.drafter), c, humaneval_prompts(), greedy(kNewTokens), &models);
  const auto& want = gpu_plain();
  ASSERT_EQ(got.tokens.size(), want.size());
  int differ = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (got.tokens[i] != want[i]) {
      if (++differ <= 3) ADD_FAILURE() << humaneval_prompts()[i].task_id << " differs from plain greedy";
    }
  const std::vector<double> kept = got.stats.acceptance_rates();
  std::printf("[gpu lossless] %s, %lld running: %d of %zu prompts differ from plain greedy, tau %.2f, first draft "
              "token kept %.2f\n",
              m.drafter, static_cast<long long>(m.running), differ, want.size(), got.stats.tau(),
              kept.empty() ? 0.0 : kept[0]);
  EXPECT_EQ(differ, 0);
  // Output stays lossless whatever the drafts; their quality shows whether
  // the drafter saw its context intact. The first draft token is kept 0.76-0.78
  // of the time (H100, 2026-11-24); a context written to the wrong slots (a
  // recorded write reading positions where a longer block table had moved
  // them) kept it 0.45 of the time.
  ASSERT_FALSE(kept.empty());
  EXPECT_GT(kept[0], 0.65) << "the drafter's context is damaged";
}

INSTANTIATE_TEST_SUITE_P(Shipped, GpuLossless,
                         ::testing::Values(Mode{"drafter-full", 1}, Mode{"drafter-full", 8}, Mode{"drafter-swa", 1},
                                           Mode{"drafter-swa", 8}, Mode{"drafter-full-fp8", 1},
                                           Mode{"drafter-full-fp8", 8}),
                         [](const auto& info) {
                           const std::string d = info.param.drafter;
                           return std::string(d == "drafter-full" ? "Full" : d == "drafter-swa" ? "Swa" : "FullFp8") +
                                  "_" + std::to_string(info.param.running);
                         });

// Recorded graphs (padded batch buckets, grids sized for a context bucket)
// against eager launches: the same tokens, greedy and seeded sampling.
SamplingParams sampling(int max_tokens, uint64_t seed);

// Every HumanEval prompt through the GPU engine twice for Mode m: runs[0]
// with mode(config, false), runs[1] with mode(config, true).
struct RunPair {
  RunResult runs[2];
};
RunPair run_pair(const Mode& m, model::DFlashDrafter* drafter, const SamplingParams& params,
                 const std::function<void(EngineConfig&, bool)>& mode) {
  RunPair p;
  for (const bool second : {false, true}) {
    EngineConfig c;
    c.max_running = m.running;
    c.num_kv_blocks = pool_for(m.running);
    mode(c, second);
    p.runs[second] = run_all(drafter, c, humaneval_prompts(), params, &shipped("cuda"));
  }
  return p;
}

// Prompts whose tokens differ between the two runs (as many of each), the
// first three named as failures.
int count_differing(const RunPair& p, const char* between) {
  int differ = 0;
  for (size_t i = 0; i < p.runs[0].tokens.size(); ++i)
    if (p.runs[0].tokens[i] != p.runs[1].tokens[i] && ++differ <= 3)
      ADD_FAILURE() << humaneval_prompts()[i].task_id << " differs between " << between;
  return differ;
}

std::string mode_label(const ::testing::TestParamInfo<Mode>& info) {
  const std::string d = info.param.drafter ? info.param.drafter : "";
  return std::string(d.empty() ? "Plain" : d == "drafter-full" ? "Full" : "Swa") + "_" +
         std::to_string(info.param.running);
}

class GpuGraphs : public Gpu, public ::testing::WithParamInterface<Mode> {};

TEST_P(GpuGraphs, SameTokensAsEager) {
  const Mode m = GetParam();
  auto& models = shipped("cuda");
  model::DFlashDrafter* drafter = m.drafter ? &models.drafter(m.drafter) : nullptr;
  for (const SamplingParams& params : {greedy(kNewTokens), sampling(kNewTokens, 11)}) {
    const RunPair pair = run_pair(m, drafter, params, [](EngineConfig& c, bool eager) { c.enforce_eager = eager; });
    const RunResult* runs = pair.runs;
    ASSERT_EQ(runs[0].tokens.size(), runs[1].tokens.size());
    const int differ = count_differing(pair, "graphs and eager");
    std::printf("[gpu graphs] %s, %lld running, %s: %d of %zu prompts differ between graphs and eager; "
                "%lld steps met a graph first, %s\n",
                m.drafter ? m.drafter : "plain", static_cast<long long>(m.running),
                params.temperature > 0 ? "seeded sampling" : "greedy", differ, runs[0].tokens.size(),
                static_cast<long long>(runs[0].recording_steps), runs[0].stats.lengths_summary().c_str());
    EXPECT_EQ(differ, 0);
    if (drafter && params.temperature == 0) {
      // The drafter's context is the same recorded or not: its first draft
      // token is kept about as often (which steps draft differs: each mode's
      // cost model chose lengths from its own timings).
      const std::vector<double> kept_g = runs[0].stats.acceptance_rates(), kept_e = runs[1].stats.acceptance_rates();
      ASSERT_FALSE(kept_g.empty() || kept_e.empty());
      std::printf("[gpu graphs] %s, %lld running: first draft token kept %.3f with graphs, %.3f eagerly\n", m.drafter,
                  static_cast<long long>(m.running), kept_g[0], kept_e[0]);
      EXPECT_NEAR(kept_g[0], kept_e[0], 0.05);
    }
    // Every prompt with its answer fits the first context bucket (1024
    // keys), whose graphs start-up records, adaptive's lengths included:
    // none is recorded mid-run, and only recorded lengths are chosen.
    EXPECT_EQ(runs[0].recording_steps, 0);
    const std::vector<int64_t>& lengths = runs[0].stats.draft_lengths();
    for (size_t k = 0; k < lengths.size(); ++k) {
      const bool recorded = k == 0 || k == 1 || k == 3 || k == 7 || k == 15;
      if (!recorded) {
        EXPECT_EQ(lengths[k], 0) << "draft length " << k << " has no graph recorded at start-up";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, GpuGraphs,
                         ::testing::Values(Mode{nullptr, 1}, Mode{nullptr, 8}, Mode{"drafter-full", 1},
                                           Mode{"drafter-full", 8}, Mode{"drafter-swa", 8}),
                         mode_label);

// Overlapped scheduling (the default on a GPU: each step launched before the
// one ahead of it is read back, its positions fixed on the GPU) against steps
// planned after reading the results: the same tokens, greedy and seeded.
class GpuOverlap : public Gpu, public ::testing::WithParamInterface<Mode> {};

TEST_P(GpuOverlap, SameTokensAsSerialSteps) {
  const Mode m = GetParam();
  auto& models = shipped("cuda");
  model::DFlashDrafter* drafter = m.drafter ? &models.drafter(m.drafter) : nullptr;
  for (const SamplingParams& params : {greedy(kNewTokens), sampling(kNewTokens, 11)}) {
    const RunPair pair =
        run_pair(m, drafter, params, [](EngineConfig& c, bool serial) { c.overlap_scheduling = !serial; });
    const RunResult* runs = pair.runs;
    ASSERT_EQ(runs[0].tokens.size(), runs[1].tokens.size());
    const int differ = count_differing(pair, "overlapped and serial steps");
    std::printf("[gpu overlap] %s, %lld running, %s: %d of %zu prompts differ between overlapped and serial steps; "
                "%lld of %lld steps launched ahead of the results, %s\n",
                m.drafter ? m.drafter : "plain", static_cast<long long>(m.running),
                params.temperature > 0 ? "seeded sampling" : "greedy", differ, runs[0].tokens.size(),
                static_cast<long long>(runs[0].followed_steps), static_cast<long long>(runs[0].steps),
                runs[0].stats.lengths_summary().c_str());
    EXPECT_EQ(differ, 0);
    EXPECT_GT(runs[0].followed_steps, runs[0].steps / 2);
    EXPECT_EQ(runs[1].followed_steps, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, GpuOverlap,
                         ::testing::Values(Mode{nullptr, 1}, Mode{nullptr, 8}, Mode{"drafter-full", 1},
                                           Mode{"drafter-full", 8}, Mode{"drafter-swa", 8}),
                         mode_label);

TEST_F(Gpu, GreedyOutputsAgreeWithCpu) {
  const auto cpu = plain_greedy("cpu");
  const auto& gpu = gpu_plain();
  size_t same = 0, first_diff_sum = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (cpu[i] == gpu[i]) {
      ++same;
      continue;
    }
    size_t j = 0;
    while (j < cpu[i].size() && j < gpu[i].size() && cpu[i][j] == gpu[i][j]) ++j;
    first_diff_sum += j;
  }
  std::printf("[gpu agreement] plain greedy, %d new tokens: %zu of %zu prompts identical on CPU (fp32) and GPU (bf16)"
              "; the others first differ after %.1f tokens on average\n",
              kNewTokens, same, cpu.size(), cpu.size() == same ? 0.0 : double(first_diff_sum) / double(cpu.size() - same));
  // The goal is 95% (measured on an H100, 2026-11-23: 147-153 of 164, i.e.
  // 90-93%: bf16 residuals drift from fp32 over 128 tokens). The bound here
  // guards against real breakage, which sends it to 0 (a broken attention
  // path gave 0 of 164 the same day).
  std::printf("[gpu agreement] goal: >= 95%% identical; now %.1f%%\n", 100.0 * double(same) / double(cpu.size()));
  EXPECT_GE(static_cast<double>(same), 0.85 * static_cast<double>(cpu.size()));
}

// ---- Penalties and logit bias on the GPU (Backend::penalize in CUDA): a
// verify row j counts drafts d_1..d_j as output, so DFlash with penalties
// emits plain decoding's tokens, greedy and seeded; log-probabilities (of
// the raw logits) come with every emitted token.
TEST_F(Gpu, DFlashWithPenaltiesEqualsPlain) {
  auto& models = shipped("cuda");
  EngineConfig c;
  c.max_running = 8;
  c.num_kv_blocks = pool_for(8);
  c.adaptive_speculation = false;  // drafts every step, so every verify row's penalties are judged
  for (bool seeded : {false, true}) {
    SamplingParams p = greedy(64);
    if (seeded) {
      p.temperature = 0.8;
      p.top_p = 0.95;
      p.seed = 11;
    }
    const auto unpenalised = run_all(nullptr, c, humaneval_prompts(), p, &models).tokens;
    p.repetition_penalty = 1.1;
    p.frequency_penalty = 0.2;
    p.presence_penalty = 0.1;
    p.logit_bias = {{220, -1.0f}, {262, 0.5f}, {13, -100.0f}};
    p.logprobs = 3;
    const auto plain = run_all(nullptr, c, humaneval_prompts(), p, &models).tokens;
    int changed = 0;
    for (size_t i = 0; i < plain.size(); ++i) changed += plain[i] != unpenalised[i];
    EXPECT_GT(changed, 20) << "the penalties hardly changed the output";
    for (const char* name : {"drafter-full", "drafter-swa"}) {
      const RunResult spec = run_all(&models.drafter(name), c, humaneval_prompts(), p, &models);
      int differ = 0;
      for (size_t i = 0; i < plain.size(); ++i) differ += spec.tokens[i] != plain[i];
      std::printf("[gpu penalties] %s, %s: %d of %zu prompts differ from plain (%d changed by the penalties); %s\n",
                  seeded ? "seeded" : "greedy", name, differ, plain.size(), changed, spec.stats.summary().c_str());
      EXPECT_EQ(differ, 0) << name;
      EXPECT_GT(spec.stats.accepted_tokens(), 0) << name;
    }
  }
}

// ---- Sampling on the GPU (Backend::sample / accept in CUDA).

SamplingParams sampling(int max_tokens, uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.8;
  p.top_k = 50;
  p.top_p = 0.95;
  p.max_tokens = max_tokens;
  p.seed = seed;
  return p;
}

// A request's draws depend on its seed and positions only: the same output
// whether it runs alone or among 8, with and without a drafter.
TEST_F(Gpu, SeededSamplingAloneEqualsAmongEight) {
  const std::vector<Prompt> prompts(humaneval_prompts().begin(), humaneval_prompts().begin() + 16);
  auto& models = shipped("cuda");
  for (model::DFlashDrafter* drafter : {static_cast<model::DFlashDrafter*>(nullptr), &models.drafter("drafter-full")}) {
    auto run = [&](int64_t running) {
      EngineConfig c;
      c.max_running = running;
      c.num_kv_blocks = humaneval_pool(running, 64);
      return run_all(drafter, c, prompts, sampling(64, 31), &models).tokens;
    };
    const auto alone = run(1), together = run(8);
    int differ = 0;
    for (size_t i = 0; i < alone.size(); ++i) differ += alone[i] != together[i];
    std::printf("[gpu sampling] %s: %d of %zu prompts differ between 1 and 8 running\n",
                drafter ? "drafter-full" : "plain", differ, alone.size());
    EXPECT_EQ(differ, 0);
  }
}

// One uniform per position couples DFlash's acceptance with plain sampling:
// with the same seeds, DFlash sampling emits the very tokens plain sampling
// does (as greedy DFlash emits plain greedy's), given batch-invariant logits.
TEST_F(Gpu, DFlashSamplingEmitsPlainSamplingsTokens) {
  auto& models = shipped("cuda");
  EngineConfig c;
  c.max_running = 8;
  c.num_kv_blocks = pool_for(8);
  c.adaptive_speculation = false;  // drafts every step, so many are judged
  const auto plain = run_all(nullptr, c, humaneval_prompts(), sampling(kNewTokens, 7), &models).tokens;
  for (const char* name : {"drafter-full", "drafter-swa"}) {
    const RunResult spec = run_all(&models.drafter(name), c, humaneval_prompts(), sampling(kNewTokens, 7), &models);
    int differ = 0;
    for (size_t i = 0; i < plain.size(); ++i) differ += spec.tokens[i] != plain[i];
    std::printf("[gpu sampling] %s, 8 running: %d of %zu prompts differ from plain sampling; %s\n", name, differ,
                plain.size(), spec.stats.summary().c_str());
    EXPECT_EQ(differ, 0) << name;
    EXPECT_GT(spec.stats.accepted_tokens(), 0) << name;
  }
}

// The GPU's draws follow the CPU reference's distribution (ops::cpu::
// sample_weights) of the GPU's own logits: the first three tokens of 4000
// seeded DFlash requests against the exact probability of every
// continuation, chi-square at alpha = 1e-4 (as SamplingLossless on the CPU).
TEST_F(Gpu, SampledContinuationsFollowTheReferenceDistribution) {
  constexpr int kEmit = 3, kRuns = 4000;
  auto& models = shipped("cuda");
  const std::vector<int32_t> prompt = models.tokenizer->encode("def add(a, b):\n    ", false);
  ops::SampleRow probe;
  probe.temperature = 1.0f;
  probe.top_k = 3;
  std::map<std::vector<int32_t>, double> exact;
  std::function<void(std::vector<int32_t>, double)> expand = [&](std::vector<int32_t> seq, double prob) {
    if (seq.size() == prompt.size() + kEmit) {
      exact[std::vector<int32_t>(seq.begin() + static_cast<long>(prompt.size()), seq.end())] = prob;
      return;
    }
    auto cache = models.target->new_cache();
    std::vector<float> logits, w;
    models.target->forward(seq, cache, logits);
    w.resize(logits.size());
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

  EngineConfig c;
  c.max_running = 64;
  c.max_tokens_per_step = 2048;
  c.num_speculative_tokens = 3;
  c.num_kv_blocks = 64 * 2;
  c.eos_token_ids = models.eos;
  Engine engine(*models.target, &models.drafter("drafter-full"), c);
  std::vector<RequestId> ids;
  for (int r = 0; r < kRuns; ++r) {
    SamplingParams p;
    p.temperature = 1.0;
    p.top_k = 3;
    p.max_tokens = kEmit;
    p.seed = 9'000'000 + static_cast<uint64_t>(r);
    ids.push_back(engine.add(prompt, p));
  }
  while (engine.has_work()) engine.step();
  std::map<std::vector<int32_t>, int> counts;
  for (RequestId id : ids) ++counts[engine.result(id).tokens];
  const auto [chi2, cells] = ::flashdraft::testing::pooled_chi_square(exact, counts, kRuns);
  for (const auto& [seq, n] : counts) EXPECT_TRUE(exact.count(seq)) << "a continuation of probability 0 was emitted";
  ASSERT_GE(cells, 5);
  const double critical = ::flashdraft::testing::chi_square_critical(cells - 1, ::flashdraft::testing::kZAlpha1e4);
  std::printf("[gpu sampling] first %d tokens of %d requests: chi-square %.1f, critical %.1f at df %d; %s\n", kEmit,
              kRuns, chi2, critical, cells - 1, engine.stats().summary().c_str());
  EXPECT_LT(chi2, critical);
}

}  // namespace
}  // namespace flashdraft::engine::testing
