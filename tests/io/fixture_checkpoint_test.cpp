// The committed tiny Qwen3 / Llama checkpoints (written by Python's
// safetensors via tools/make_tiny_qwen3.py) load, and every tensor has the
// shape its config.json implies.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "io/checkpoint.h"
#include "io/generation_config.h"
#include "io/json_text.h"
#include "io/model_config.h"

namespace flashdraft::io {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = FD_FIXTURES_DIR;

struct Expected {
  std::string name;
  std::vector<int64_t> shape;
};

std::vector<Expected> expected_tensors(const ModelConfig& c) {
  const int64_t q = c.num_attention_heads * c.head_dim;
  const int64_t kv = c.num_key_value_heads * c.head_dim;
  std::vector<Expected> out = {{"model.embed_tokens.weight", {c.vocab_size, c.hidden_size}},
                               {"model.norm.weight", {c.hidden_size}}};
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {c.vocab_size, c.hidden_size}});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    out.push_back({p + "input_layernorm.weight", {c.hidden_size}});
    out.push_back({p + "post_attention_layernorm.weight", {c.hidden_size}});
    out.push_back({p + "self_attn.q_proj.weight", {q, c.hidden_size}});
    out.push_back({p + "self_attn.k_proj.weight", {kv, c.hidden_size}});
    out.push_back({p + "self_attn.v_proj.weight", {kv, c.hidden_size}});
    out.push_back({p + "self_attn.o_proj.weight", {c.hidden_size, q}});
    out.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, c.hidden_size}});
    out.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, c.hidden_size}});
    out.push_back({p + "mlp.down_proj.weight", {c.hidden_size, c.intermediate_size}});
    if (c.qk_norm) {
      out.push_back({p + "self_attn.q_norm.weight", {c.head_dim}});
      out.push_back({p + "self_attn.k_norm.weight", {c.head_dim}});
    }
    if (c.attention_bias) {
      out.push_back({p + "self_attn.q_proj.bias", {q}});
      out.push_back({p + "self_attn.k_proj.bias", {kv}});
      out.push_back({p + "self_attn.v_proj.bias", {kv}});
      out.push_back({p + "self_attn.o_proj.bias", {c.hidden_size}});
    }
  }
  return out;
}

void check_fixture(const fs::path& dir, DType stored, bool qk_norm) {
  const ModelConfig config = load_model_config(dir);
  EXPECT_EQ(config.qk_norm, qk_norm);
  const Checkpoint ckpt = Checkpoint::open(dir);
  const auto expected = expected_tensors(config);
  EXPECT_EQ(ckpt.names().size(), expected.size());
  for (const Expected& e : expected) {
    ASSERT_TRUE(ckpt.contains(e.name)) << e.name;
    EXPECT_EQ(ckpt.get(e.name).dtype, stored) << e.name;
    const std::vector<float> values = ckpt.load_f32(e.name, e.shape);
    for (float v : values) ASSERT_TRUE(std::isfinite(v)) << e.name;
  }
  // The index's total_size was summed by the Python writer.
  const auto index = parse_json(read_text_file(dir / "model.safetensors.index.json"), "index");
  EXPECT_EQ(ckpt.total_bytes(), index["metadata"]["total_size"].get<size_t>());

  const GenerationConfig gen = load_generation_config(dir);
  EXPECT_EQ(gen.eos_token_ids, config.eos_token_ids);
}

TEST(FixtureCheckpoint, TinyQwen3) {
  check_fixture(kFixtures / "tiny-qwen3", DType::BF16, /*qk_norm=*/true);
}

TEST(FixtureCheckpoint, TinyLlama) {
  check_fixture(kFixtures / "tiny-llama", DType::F16, /*qk_norm=*/false);
}

}  // namespace
}  // namespace flashdraft::io
