#pragma once
// config.json of a Qwen3 or Llama model, typed. Both architectures share the
// decoder layout; Llama lacks the per-head q/k RMSNorm (qk_norm = false).
// Files written by transformers 4.x (rope_theta, torch_dtype) and 5.x
// (rope_parameters, dtype) are both read.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/rope_config.h"

namespace flashdraft::io {

struct ModelConfig {
  std::string model_type;  // "qwen3" or "llama"
  std::vector<std::string> architectures;
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0,
          num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  double rms_norm_eps = 0, rope_theta = 0;  // rope_theta == rope.theta
  RopeConfig rope;                          // base and scaling (io/rope_config.h)
  int64_t max_position_embeddings = 0;
  bool attention_bias = false, tie_word_embeddings = false, qk_norm = true;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // config.json may give an int or a list
  std::string torch_dtype;             // "" when the file does not say
  std::string hidden_act;              // only "silu" is accepted
  nlohmann::json raw;                  // the whole file, for fields other layers read
};

// Reads dir/config.json. Throws flashdraft::Error naming the file and the
// field for: a missing required field, a wrong type or value, an unsupported
// model_type / hidden_act, a RoPE type other than default / linear / llama3 /
// yarn (io/rope_config.h), sliding-window attention or MLP bias
// (all of which would silently change the math if ignored), an architecture
// other than Qwen3ForCausalLM / LlamaForCausalLM (a DFlashDraftModel is read
// by model/dflash_config), and layer_types other than full_attention (hybrid
// linear-attention models such as Qwen3.5, also under text_config).
// Required: vocab_size, hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads, rms_norm_eps, max_position_embeddings, and rope_theta
// (top level or in rope_parameters; rope_scaling / rope_parameters give the
// scaling). Defaults as in transformers:
// num_key_value_heads = num_attention_heads, head_dim = hidden/heads,
// hidden_act = "silu", attention_bias = tie_word_embeddings = false.
ModelConfig load_model_config(const std::filesystem::path& dir);
// Same, from JSON text; `source` names it in errors.
ModelConfig parse_model_config(const std::string& text, const std::string& source);

}  // namespace flashdraft::io
