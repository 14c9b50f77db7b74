#include "serving/generation_defaults.h"

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"

namespace flashdraft::serving {

using engine::SamplingParams;
namespace {

TEST(SamplingDefaults, Qwen3GenerationConfig) {
  const io::GenerationConfig g = io::parse_generation_config(
      R"({"do_sample": true, "temperature": 0.6, "top_k": 20, "top_p": 0.95,
          "eos_token_id": [151645, 151643], "bos_token_id": 151643})",
      "generation_config.json");
  const SamplingParams p = sampling_defaults(g);
  EXPECT_DOUBLE_EQ(p.temperature, 0.6);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_DOUBLE_EQ(p.top_p, 0.95);
  EXPECT_DOUBLE_EQ(p.min_p, 0.0);
  EXPECT_EQ(p.max_tokens, SamplingParams{}.max_tokens);
  EXPECT_TRUE(p.stop_token_ids.empty());  // EOS goes to the loop's EOS list
  EXPECT_FALSE(p.seed.has_value());
}

TEST(SamplingDefaults, EmptyConfigKeepsSamplingParamsDefaults) {
  const SamplingParams p = sampling_defaults(io::GenerationConfig{});
  const SamplingParams d;
  EXPECT_EQ(p.temperature, d.temperature);
  EXPECT_EQ(p.top_k, d.top_k);
  EXPECT_EQ(p.top_p, d.top_p);
  EXPECT_EQ(p.min_p, d.min_p);
  EXPECT_EQ(p.max_tokens, d.max_tokens);
  EXPECT_EQ(p.repetition_penalty, 1.0);
  EXPECT_FALSE(p.needs_penalties());
}

// vLLM takes generation_config.json's repetition_penalty as the default.
TEST(SamplingDefaults, RepetitionPenaltyIsADefault) {
  const io::GenerationConfig g =
      io::parse_generation_config(R"({"repetition_penalty": 1.05, "temperature": 0.7})", "generation_config.json");
  const SamplingParams p = sampling_defaults(g);
  EXPECT_DOUBLE_EQ(p.repetition_penalty, 1.05);
  EXPECT_TRUE(p.needs_penalties());
}

TEST(SamplingDefaults, DoSampleFalseIsGreedy) {
  io::GenerationConfig g;
  g.do_sample = false;
  g.temperature = 0.7;
  EXPECT_EQ(sampling_defaults(g).temperature, 0.0);
  g.do_sample = true;
  EXPECT_EQ(sampling_defaults(g).temperature, 0.7);
}

TEST(SamplingDefaults, MinPMaxNewTokensAndDisabledTopK) {
  io::GenerationConfig g;
  g.min_p = 0.05;
  g.max_new_tokens = 1024;
  g.top_k = -1;  // vLLM's spelling of "off"
  const SamplingParams p = sampling_defaults(g);
  EXPECT_DOUBLE_EQ(p.min_p, 0.05);
  EXPECT_EQ(p.max_tokens, 1024);
  EXPECT_EQ(p.top_k, 0);
}

TEST(EosTokenIds, UniteGenerationConfigModelConfigAndTokenizerWithoutRepeats) {
  auto tok = tokenizer::Tokenizer::load(FD_FIXTURES_DIR "/cli/tiny-tokenizer");
  ASSERT_TRUE(tok.eos_token_id().has_value());
  const int32_t im_end = *tok.eos_token_id();
  io::GenerationConfig g;
  g.eos_token_ids = {100, 101};
  io::ModelConfig m;
  m.eos_token_ids = {101, 102};
  EXPECT_EQ(eos_token_ids(m, g, tok), (std::vector<int32_t>{100, 101, 102, im_end}));
  // Nothing from the configs: the tokenizer's eos_token still stops.
  EXPECT_EQ(eos_token_ids({}, {}, tok), (std::vector<int32_t>{im_end}));
  // The tokenizer's id already listed is not repeated.
  m.eos_token_ids = {im_end};
  EXPECT_EQ(eos_token_ids(m, g, tok), (std::vector<int32_t>{100, 101, im_end}));
}

}  // namespace
}  // namespace flashdraft::serving
