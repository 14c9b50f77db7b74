// Llama-3.1-8B-Instruct's config.json as published (tests/fixtures/configs,
// a copy of ../shared/configs): llama3 RoPE scaling, three EOS ids. It loads
// with random weights (--load-format dummy) and its RoPE table reaches the
// forward.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/model_config.h"
#include "model/qwen3_model.h"
#include "ops/backend_factory.h"

namespace flashdraft::model {
namespace {

using nlohmann::json;

const std::filesystem::path kLlama31 = std::filesystem::path(FD_FIXTURES_DIR) / "configs" / "llama-3.1-8b-instruct";

TEST(Llama31Config, ParsesWithLlama3RopeAndThreeEosIds) {
  const io::ModelConfig c = io::load_model_config(kLlama31);
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.rope.type, io::RopeType::kLlama3);
  EXPECT_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(c.rope.factor, 8.0);
  EXPECT_EQ(c.rope.low_freq_factor, 1.0);
  EXPECT_EQ(c.rope.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
}

// Its layout and RoPE at a size the CPU tests can afford (the 8B itself, in
// f32, would not fit a CI machine; the GPU test below loads it whole).
io::ModelConfig shrunk(bool llama3_rope) {
  std::ifstream in(kLlama31 / "config.json");
  json j = json::parse(in);
  j["hidden_size"] = 256;
  j["num_attention_heads"] = 2;  // head_dim 128, as the 8B
  j["num_key_value_heads"] = 1;
  j["intermediate_size"] = 512;
  j["num_hidden_layers"] = 2;
  j["vocab_size"] = 1024;
  if (!llama3_rope) j.erase("rope_scaling");
  return io::parse_model_config(j.dump(), "shrunk llama-3.1-8b-instruct");
}

std::vector<float> logits_at_positions(const io::ModelConfig& cfg, int n_tokens) {
  auto model = Qwen3Model::load_dummy(cfg, ops::make_backend("cpu"), 7);
  auto cache = model->new_cache();
  std::vector<int32_t> ids(static_cast<size_t>(n_tokens));
  for (int i = 0; i < n_tokens; ++i) ids[static_cast<size_t>(i)] = (i * 37 + 11) % 1024;
  std::vector<float> logits;
  model->forward(ids, cache, logits, /*all_logits=*/true);
  // A few decode steps on top, greedy.
  for (int step = 0; step < 3; ++step) {
    const auto last = logits.end() - cfg.vocab_size;
    const int32_t next = static_cast<int32_t>(std::max_element(last, logits.end()) - last);
    std::vector<float> step_logits;
    model->forward(std::span(&next, 1), cache, step_logits);
    logits.insert(logits.end(), step_logits.begin(), step_logits.end());
  }
  return logits;
}

TEST(Llama31Config, DummyWeightsRunAndTheScaledRopeReachesTheForward) {
  const int n = 300;  // past positions where llama3's blended band turns a visible angle
  const auto scaled = logits_at_positions(shrunk(true), n);
  const auto plain = logits_at_positions(shrunk(false), n);
  ASSERT_EQ(scaled.size(), plain.size());
  const int64_t V = 1024;
  for (float v : scaled) ASSERT_TRUE(std::isfinite(v));
  // Position 0 has angle 0 for every frequency: the two agree there...
  for (int64_t i = 0; i < V; ++i) ASSERT_EQ(scaled[i], plain[i]) << i;
  // ...and not at the end, where the low frequencies were divided by 8.
  double diff = 0;
  for (int64_t i = (n - 1) * V; i < n * V; ++i) diff = std::max(diff, std::abs(double(scaled[i]) - plain[i]));
  EXPECT_GT(diff, 1e-4);
}

TEST(Llama31Config, FullSizeLoadsWithDummyWeightsOnTheGpu) {
  if (!ops::cuda_available()) GTEST_SKIP() << "no CUDA GPU here (or a build without CUDA)";
  const io::ModelConfig cfg = io::load_model_config(kLlama31);
  auto model = Qwen3Model::load_dummy(cfg, ops::make_backend("cuda"));
  auto cache = model->new_cache();
  std::vector<int32_t> ids(64);
  for (int i = 0; i < 64; ++i) ids[static_cast<size_t>(i)] = 128000 + i;  // near the top of the vocabulary
  std::vector<float> logits;
  model->forward(ids, cache, logits);
  ASSERT_EQ(static_cast<int64_t>(logits.size()), cfg.vocab_size);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace flashdraft::model
