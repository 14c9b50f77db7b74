#pragma once
// What a config.json implies, without weights: the tensors its checkpoint
// must hold (names and shapes, as Qwen3Model and DFlashDrafter load them),
// the parameter count and the KV cache bytes per token. `flashdraft inspect`
// checks checkpoints against these and prints them.
#include <cstdint>
#include <string>
#include <vector>

#include "io/model_config.h"
#include "model/dflash_config.h"

namespace flashdraft::model {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// A Qwen3 / Llama target: model.embed_tokens, model.layers.<i>.*, model.norm,
// and lm_head unless the embeddings are tied.
std::vector<TensorSpec> target_tensors(const io::ModelConfig& cfg);

// Checkpoint tensors a target may carry without a place (as Qwen3Model
// allows): a tied lm_head, saved rotary inv_freq buffers.
bool ignorable_target_tensor(const std::string& name, const io::ModelConfig& cfg);

// A DFlash drafter (DFLASH.md section 1): fc [H, taps x target_hidden],
// hidden_norm, layers.<i>.*, norm; no embedding and no lm_head (the target's
// are used).
std::vector<TensorSpec> drafter_tensors(const DFlashConfig& d, int64_t target_hidden);

int64_t parameter_count(const std::vector<TensorSpec>& tensors);

// K and V of every layer for one token position, at `dtype_bytes` per element.
int64_t kv_bytes_per_token(const io::ModelConfig& cfg, int64_t dtype_bytes);

}  // namespace flashdraft::model
