// Backend::penalize (CPU reference) fed by PenaltyHistory's item lists,
// against vLLM's dense formulation written out here: masks and counts over
// the whole vocabulary, bias added, then repetition, frequency, presence.
// Rows of a verify block count their drafts as output, and must equal the
// dense formula over prompt + output + those drafts.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "core/error.h"
#include "engine/penalty_history.h"
#include "ops/backend.h"

namespace flashdraft::engine {
namespace {

// vLLM's apply_penalties (and the logit-bias processor before it), dense.
std::vector<float> dense(std::vector<float> l, const std::vector<int32_t>& prompt, const std::vector<int32_t>& output,
                         const SamplingParams& p) {
  const size_t v = l.size();
  std::vector<int> count(v, 0);
  std::vector<bool> in_prompt(v, false);
  for (int32_t t : prompt) in_prompt[t] = true;
  for (int32_t t : output) ++count[t];
  std::map<int32_t, float> bias;
  for (const auto& [t, b] : p.logit_bias) bias[t] = b;
  for (const auto& [t, b] : bias) l[t] += b;
  const auto rep = static_cast<float>(p.repetition_penalty), freq = static_cast<float>(p.frequency_penalty),
             pres = static_cast<float>(p.presence_penalty);
  for (size_t t = 0; t < v; ++t) {
    if (in_prompt[t] || count[t] > 0) l[t] = l[t] > 0 ? l[t] / rep : l[t] * rep;
    if (count[t] > 0) {
      l[t] -= freq * static_cast<float>(count[t]);
      l[t] -= pres;
    }
  }
  return l;
}

TEST(Penalize, HandWorkedRow) {
  // Tokens: 0 in the prompt (positive), 1 in the prompt (negative), 2 twice
  // in the output, 3 untouched, 4 biased only.
  SamplingParams p;
  p.repetition_penalty = 2.0;
  p.frequency_penalty = 0.5;
  p.presence_penalty = 0.25;
  p.logit_bias = {{4, -100.0f}};
  PenaltyHistory h;
  std::vector<int32_t> items;
  const std::vector<int32_t> prompt{0, 1, 0}, output{2, 2};
  h.update(prompt, output, p);
  h.append_items(items);
  std::vector<float> l{3.0f, -3.0f, 1.0f, 5.0f, 7.0f};
  ops::PenaltyRow row{.repetition = 2.0f, .frequency = 0.5f, .presence = 0.25f,
                      .items_count = static_cast<int32_t>(items.size() / 3)};
  auto be = ops::make_cpu_backend();
  ops::OwnedTensor logits = be->alloc_tensor(ops::DType::F32, 1, 5), rows = be->alloc_tensor(ops::DType::I32, 1, 8),
                   it = be->alloc_tensor(ops::DType::I32, static_cast<int64_t>(items.size() / 3), 3);
  be->upload(logits.t, l.data(), ops::DType::F32);
  be->upload(rows.t, &row, ops::DType::I32);
  be->upload(it.t, items.data(), ops::DType::I32);
  be->penalize(logits.t, rows.t, it.t, ops::Tensor{});
  be->download(logits.t, l.data());
  // 2: 1 / 2 - 0.5 * 2 - 0.25 = -0.75.
  EXPECT_EQ(l, (std::vector<float>{1.5f, -6.0f, -0.75f, 5.0f, -93.0f}));
}

// A verify block of k + 1 rows over a random history: row j == the dense
// formula with the first j drafts appended to the output.
TEST(Penalize, VerifyRowsCountTheirDrafts) {
  std::mt19937 rng(7);
  constexpr int32_t kVocab = 300;
  auto be = ops::make_cpu_backend();
  for (int trial = 0; trial < 50; ++trial) {
    SamplingParams p;
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    p.repetition_penalty = trial % 5 == 0 ? 1.0 : 0.5 + (trial % 7) * 0.25;
    p.frequency_penalty = (trial % 3) * 0.7 - 0.7;
    p.presence_penalty = (trial % 4) * 0.5 - 0.5;
    std::vector<int32_t> prompt, output, drafts;
    for (int i = 0; i < 1 + trial * 3; ++i) prompt.push_back(static_cast<int32_t>(rng() % 60));
    for (int i = 0; i < trial % 20; ++i) output.push_back(static_cast<int32_t>(rng() % 80));
    for (int i = 0; i < trial % 6; ++i) p.logit_bias.push_back({static_cast<int32_t>(rng() % kVocab), u(rng) * 20});
    const int k = 1 + trial % 15;
    for (int i = 0; i < k; ++i) drafts.push_back(static_cast<int32_t>(rng() % 100));

    PenaltyHistory h;
    std::vector<int32_t> items;
    // Grown in two steps, as a request's output grows.
    const size_t half = output.size() / 2;
    h.update(prompt, std::span(output).first(half), p);
    h.update(prompt, output, p);
    h.append_items(items);

    std::vector<float> l(static_cast<size_t>((k + 1) * kVocab));
    for (float& x : l) x = rng() % 9 == 0 ? 0.0f : u(rng);
    std::vector<ops::PenaltyRow> rows(static_cast<size_t>(k + 1));
    for (int j = 0; j <= k; ++j) {
      rows[j] = {.repetition = static_cast<float>(p.repetition_penalty),
                 .frequency = static_cast<float>(p.frequency_penalty),
                 .presence = static_cast<float>(p.presence_penalty),
                 .items_count = static_cast<int32_t>(items.size() / 3),
                 .drafts_count = j};
    }
    ops::OwnedTensor lt = be->alloc_tensor(ops::DType::F32, k + 1, kVocab),
                     rt = be->alloc_tensor(ops::DType::I32, k + 1, 8),
                     it = be->alloc_tensor(ops::DType::I32, static_cast<int64_t>(items.size() / 3), 3),
                     dt = be->alloc_tensor(ops::DType::I32, k, 1);
    be->upload(lt.t, l.data(), ops::DType::F32);
    be->upload(rt.t, rows.data(), ops::DType::I32);
    be->upload(it.t, items.data(), ops::DType::I32);
    be->upload(dt.t, drafts.data(), ops::DType::I32);
    be->penalize(lt.t, rt.t, it.t, dt.t);
    std::vector<float> got(l.size());
    be->download(lt.t, got.data());
    for (int j = 0; j <= k; ++j) {
      std::vector<int32_t> out = output;
      out.insert(out.end(), drafts.begin(), drafts.begin() + j);
      const std::vector<float> want =
          dense(std::vector<float>(l.begin() + j * kVocab, l.begin() + (j + 1) * kVocab), prompt, out, p);
      const std::vector<float> row(got.begin() + j * kVocab, got.begin() + (j + 1) * kVocab);
      ASSERT_EQ(row, want) << "trial " << trial << " row " << j;
    }
  }
}

TEST(Penalize, ValidationNamesTheParameter) {
  SamplingParams p;
  p.presence_penalty = 2.5;
  EXPECT_THROW(validate(p), Error);
  p = {};
  p.repetition_penalty = 0;
  EXPECT_THROW(validate(p), Error);
  p = {};
  p.logit_bias = {{3, 101.0f}};
  EXPECT_THROW(validate(p), Error);
  p = {};
  p.logprobs = 21;
  EXPECT_THROW(validate(p), Error);
  p = {};
  p.logprobs = 20;
  p.frequency_penalty = -2;
  EXPECT_NO_THROW(validate(p));
  EXPECT_TRUE(p.needs_penalties());
  EXPECT_FALSE(SamplingParams{}.needs_penalties());
}

}  // namespace
}  // namespace flashdraft::engine
