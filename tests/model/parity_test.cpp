// Logits parity with Hugging Face (Qwen3ForCausalLM / LlamaForCausalLM, fp32
// reference from the same rounded weights) on the tiny fixture checkpoints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/greedy.h"
#include "model/qwen3_model.h"
#include "reference_data.h"

namespace flashdraft::model {
namespace {

using testing::fixture;
using testing::load_reference;
using testing::rel_l2;

constexpr double kMaxRelL2 = 1e-4;

class Parity : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dir_ = fixture(GetParam());
    auto ckpt = io::Checkpoint::open(dir_);
    model_ = Qwen3Model::load(ckpt, io::load_model_config(dir_));
    ref_ = load_reference(dir_);
  }
  std::filesystem::path dir_;
  std::unique_ptr<Qwen3Model> model_;
  testing::Reference ref_;
};

TEST_P(Parity, AllLogitsOfOnePrefillMatch) {
  const int64_t vocab = model_->config().vocab_size;
  for (const auto& p : ref_.prompts) {
    auto cache = model_->new_cache();
    std::vector<float> logits;
    model_->forward(p.ids, cache, logits, /*all_logits=*/true);
    ASSERT_EQ(logits.size(), p.ids.size() * static_cast<size_t>(vocab));
    const double err = rel_l2(logits.data(), p.logits.data.data(), logits.size());
    std::printf("[parity] %s prompt of %zu tokens: relative L2 error %.3e\n", GetParam(), p.ids.size(), err);
    EXPECT_LT(err, kMaxRelL2) << p.ids.size() << "-token prompt";
    EXPECT_EQ(cache.length(), static_cast<int64_t>(p.ids.size()));
  }
}

TEST_P(Parity, LastLogitsOnlyMatchTheLastRow) {
  const int64_t vocab = model_->config().vocab_size;
  const auto& p = ref_.prompts.back();
  auto cache = model_->new_cache();
  std::vector<float> logits;
  model_->forward(p.ids, cache, logits);
  ASSERT_EQ(logits.size(), static_cast<size_t>(vocab));
  const float* want = p.logits.data.data() + (p.ids.size() - 1) * vocab;
  EXPECT_LT(rel_l2(logits.data(), want, logits.size()), kMaxRelL2);
}

TEST_P(Parity, TokenByTokenAndChunkedDecodingMatch) {
  // Same logits whether the prompt goes in at once, in uneven chunks over
  // the KV cache, or one token at a time.
  const int64_t vocab = model_->config().vocab_size;
  for (const auto& p : ref_.prompts) {
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}}) {
      auto cache = model_->new_cache();
      std::vector<float> all, logits;
      for (size_t s = 0; s < p.ids.size(); s += chunk) {
        const size_t len = std::min(chunk, p.ids.size() - s);
        model_->forward(std::span(p.ids).subspan(s, len), cache, logits, true);
        all.insert(all.end(), logits.begin(), logits.end());
      }
      ASSERT_EQ(all.size(), p.ids.size() * static_cast<size_t>(vocab));
      const double err = rel_l2(all.data(), p.logits.data.data(), all.size());
      if (chunk == 1)
        std::printf("[parity] %s prompt of %zu tokens, one token per forward: relative L2 error %.3e\n",
                    GetParam(), p.ids.size(), err);
      EXPECT_LT(err, kMaxRelL2) << p.ids.size() << "-token prompt in chunks of " << chunk;
    }
  }
}

TEST_P(Parity, GreedyContinuationsAreIdentical) {
  for (const auto& p : ref_.prompts) {
    auto cache = model_->new_cache();
    const auto got = greedy_continue(*model_, cache, p.ids, static_cast<int64_t>(p.greedy.size()));
    EXPECT_EQ(got, p.greedy) << p.ids.size() << "-token prompt";
    EXPECT_EQ(cache.length(), static_cast<int64_t>(p.ids.size() + p.greedy.size() - 1));
  }
}

TEST_P(Parity, GreedyStopsAtAStopId) {
  const auto& p = ref_.prompts.back();
  const std::vector<int64_t> stop = {p.greedy[4]};
  auto cache = model_->new_cache();
  const auto got = greedy_continue(*model_, cache, p.ids, 20, stop);
  const auto first = std::find(p.greedy.begin(), p.greedy.end(), p.greedy[4]);
  EXPECT_EQ(got, std::vector<int32_t>(p.greedy.begin(), first + 1));
}

INSTANTIATE_TEST_SUITE_P(TinyModels, Parity, ::testing::Values("tiny-qwen3", "tiny-llama"),
                         [](const auto& info) { return std::string(info.param) == "tiny-qwen3" ? "Qwen3" : "Llama"; });

TEST(ParityFixtures, CoverWhatTheyAreMeantTo) {
  // The fixtures must keep exercising: GQA, >= 2 layers, sharding, tied and
  // untied heads, biases, both q/k-norm paths, a >= 200-token prompt.
  const auto q = io::load_model_config(fixture("tiny-qwen3"));
  EXPECT_TRUE(q.qk_norm);
  EXPECT_TRUE(q.tie_word_embeddings);
  EXPECT_LT(q.num_key_value_heads, q.num_attention_heads);
  EXPECT_GE(q.num_hidden_layers, 2);
  EXPECT_TRUE(std::filesystem::exists(fixture("tiny-qwen3") / "model.safetensors.index.json"));
  size_t longest = 0;
  for (const auto& p : load_reference(fixture("tiny-qwen3")).prompts) longest = std::max(longest, p.ids.size());
  EXPECT_GE(longest, 200u);
  const auto l = io::load_model_config(fixture("tiny-llama"));
  EXPECT_FALSE(l.qk_norm);
  EXPECT_FALSE(l.tie_word_embeddings);
  EXPECT_TRUE(l.attention_bias);
}

}  // namespace
}  // namespace flashdraft::model
