#pragma once
// The RoPE table a model's attention uses: inverse frequencies and the
// attention factor for each RoPE type of io::RopeConfig, computed as
// transformers' rotary initialisation computes them (ROPE_INIT_FUNCTIONS), with
// its float32 roundings step for step so that angles at long positions match
// the reference bit for bit. The one place RoPE scaling math lives: the target
// and the drafter both build their ops::Rope from it.
#include <vector>

#include "io/model_config.h"

namespace flashdraft::model {

struct RopeTable {
  std::vector<float> inv_freq;  // [head_dim / 2]
  float attention_factor = 1.0f;  // cos and sin are multiplied by it (yarn)
};

// From cfg.rope, cfg.head_dim and cfg.max_position_embeddings.
RopeTable rope_table(const io::ModelConfig& cfg);

}  // namespace flashdraft::model
