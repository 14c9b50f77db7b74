// Loading: progress reporting, and configs that do not match the weights.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/qwen3_model.h"
#include "reference_data.h"

namespace flashdraft::model {
namespace {

using testing::fixture;

std::string load_error(const io::ModelConfig& cfg) {
  try {
    Qwen3Model::load(io::Checkpoint::open(fixture("tiny-qwen3")), cfg);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Load, ReportsProgressUpToAllWeightBytes) {
  const auto dir = fixture("tiny-qwen3");
  const auto ckpt = io::Checkpoint::open(dir);
  std::vector<std::pair<size_t, size_t>> calls;
  auto model = Qwen3Model::load(ckpt, io::load_model_config(dir),
                                [&](size_t done, size_t total) { calls.emplace_back(done, total); });
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls.front().first, 0u);
  // Tied embeddings: the file has no lm_head, so every tensor in it is loaded.
  EXPECT_EQ(calls.back().first, ckpt.total_bytes());
  for (size_t i = 1; i < calls.size(); ++i) {
    EXPECT_GT(calls[i].first, calls[i - 1].first);
    EXPECT_EQ(calls[i].second, ckpt.total_bytes());
  }
}

TEST(Load, LlamaConfigOnQwen3WeightsIsRejected) {
  auto cfg = io::load_model_config(fixture("tiny-qwen3"));
  cfg.qk_norm = false;  // q_norm/k_norm tensors would be silently ignored
  const auto msg = load_error(cfg);
  EXPECT_NE(msg.find("self_attn.k_norm.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tiny-qwen3"), std::string::npos) << msg;
}

TEST(Load, MoreLayersThanTheCheckpointHasNamesTheMissingTensor) {
  auto cfg = io::load_model_config(fixture("tiny-qwen3"));
  cfg.num_hidden_layers += 1;
  const auto msg = load_error(cfg);
  EXPECT_NE(msg.find("model.layers.3."), std::string::npos) << msg;
}

TEST(Load, FewerLayersLeavesTensorsUnaccountedFor) {
  auto cfg = io::load_model_config(fixture("tiny-qwen3"));
  cfg.num_hidden_layers -= 1;
  const auto msg = load_error(cfg);
  EXPECT_NE(msg.find("model.layers.2."), std::string::npos) << msg;
}

TEST(Load, WrongShapeNamesTheTensor) {
  auto cfg = io::load_model_config(fixture("tiny-qwen3"));
  cfg.intermediate_size = 100;
  const auto msg = load_error(cfg);
  EXPECT_NE(msg.find("mlp."), std::string::npos) << msg;
  EXPECT_NE(msg.find("100"), std::string::npos) << msg;
}

TEST(Load, UntiedConfigWithoutLmHeadIsRejected) {
  auto cfg = io::load_model_config(fixture("tiny-qwen3"));
  cfg.tie_word_embeddings = false;
  EXPECT_NE(load_error(cfg).find("lm_head.weight"), std::string::npos);
}

TEST(Load, MissingBiasesAreRejected) {
  auto cfg = io::load_model_config(fixture("tiny-qwen3"));
  cfg.attention_bias = true;
  EXPECT_NE(load_error(cfg).find("q_proj.bias"), std::string::npos);
}

TEST(Load, HeadsThatDoNotGroupAreRejected) {
  auto cfg = io::load_model_config(fixture("tiny-qwen3"));
  cfg.num_key_value_heads = 3;
  EXPECT_NE(load_error(cfg).find("num_key_value_heads"), std::string::npos);
}

TEST(Forward, OutOfVocabularyTokenThrowsAndLeavesTheCacheAlone) {
  const auto dir = fixture("tiny-qwen3");
  auto model = Qwen3Model::load(io::Checkpoint::open(dir), io::load_model_config(dir));
  auto cache = model->new_cache();
  std::vector<float> logits;
  const int32_t good[] = {1, 2, 3};
  model->forward(good, cache, logits);
  const int32_t bad[] = {4, static_cast<int32_t>(model->config().vocab_size)};
  EXPECT_THROW(model->forward(bad, cache, logits), Error);
  EXPECT_EQ(cache.length(), 3);
  EXPECT_THROW(model->forward(std::span<const int32_t>(), cache, logits), Error);
}

TEST(Forward, RejectsACacheOfAnotherModel) {
  auto qwen = Qwen3Model::load(io::Checkpoint::open(fixture("tiny-qwen3")), io::load_model_config(fixture("tiny-qwen3")));
  auto llama = Qwen3Model::load(io::Checkpoint::open(fixture("tiny-llama")), io::load_model_config(fixture("tiny-llama")));
  auto cache = llama->new_cache();
  std::vector<float> logits;
  const int32_t ids[] = {1};
  EXPECT_THROW(qwen->forward(ids, cache, logits), Error);
}

}  // namespace
}  // namespace flashdraft::model
