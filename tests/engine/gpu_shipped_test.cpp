// The shipped model pair on the CUDA backend (bf16) against the CPU reference
// backend (fp32): logits of the target and of both drafters within bf16
// bounds; greedy DFlash output identical to plain greedy output on the GPU
// for all 164 HumanEval prompts, both drafters, one request at a time and 8
// at once; and how many prompts' greedy outputs agree exactly between CPU
// and GPU. Every test reports SKIPPED on a machine without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "ops/backend_factory.h"
#include "shipped_models.h"

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
  for (const std::string name : {"drafter-full", "drafter-swa"}) {
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

void PrintTo(const Mode& m, std::ostream* os) { *os << m.drafter << " x" << m.running; }

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
  std::printf("[gpu lossless] %s, %lld running: %d of %zu prompts differ from plain greedy, tau %.2f\n", m.drafter,
              static_cast<long long>(m.running), differ, want.size(), got.stats.tau());
  EXPECT_EQ(differ, 0);
}

INSTANTIATE_TEST_SUITE_P(Shipped, GpuLossless,
                         ::testing::Values(Mode{"drafter-full", 1}, Mode{"drafter-full", 8}, Mode{"drafter-swa", 1},
                                           Mode{"drafter-swa", 8}),
                         [](const auto& info) {
                           return std::string(info.param.drafter == std::string("drafter-full") ? "Full" : "Swa") +
                                  "_" + std::to_string(info.param.running);
                         });

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

}  // namespace
}  // namespace flashdraft::engine::testing
