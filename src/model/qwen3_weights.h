#pragma once
// The weights of a Qwen3 (or Llama) decoder, under their checkpoint names,
// widened to fp32 at load. Optional parts stay empty: biases unless
// config.attention_bias, q/k norms unless config.qk_norm, lm_head when the
// embeddings are tied.
#include <cstddef>
#include <functional>
#include <vector>

#include "io/checkpoint.h"
#include "io/model_config.h"

namespace flashdraft::model {

using LoadProgress = std::function<void(size_t done_bytes, size_t total_bytes)>;

struct Qwen3LayerWeights {
  std::vector<float> input_layernorm, post_attention_layernorm;  // [hidden]
  std::vector<float> q_proj, k_proj, v_proj, o_proj;              // Linear [out, in]
  std::vector<float> q_bias, k_bias, v_bias, o_bias;
  std::vector<float> q_norm, k_norm;                               // [head_dim]
  std::vector<float> gate_proj, up_proj, down_proj;
};

struct Qwen3Weights {
  std::vector<float> embed_tokens;  // [vocab, hidden]
  std::vector<Qwen3LayerWeights> layers;
  std::vector<float> norm;     // [hidden]
  std::vector<float> lm_head;  // [vocab, hidden]; empty when tied to embed_tokens

  const float* lm_head_data() const { return lm_head.empty() ? embed_tokens.data() : lm_head.data(); }
};

// Loads every tensor the config implies, checking shapes. A missing tensor,
// a wrong shape, or a checkpoint tensor the config does not account for
// (extra layers, q_norm on a Llama config, biases without attention_bias) is
// a flashdraft::Error naming the directory and tensor. `progress` is called
// after each tensor with bytes read so far and in total.
Qwen3Weights load_qwen3_weights(const io::Checkpoint& ckpt, const io::ModelConfig& cfg,
                                const LoadProgress& progress = {});

}  // namespace flashdraft::model
