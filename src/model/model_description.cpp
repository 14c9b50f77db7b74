#include "model/model_description.h"

namespace flashdraft::model {
namespace {

// One decoder layer under `p`: attention (with biases and q/k norms as the
// config says) and the SwiGLU MLP.
void add_decoder_layer(std::vector<TensorSpec>& out, const std::string& p, const io::ModelConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  const int64_t q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd;
  out.push_back({p + "input_layernorm.weight", {H}});
  out.push_back({p + "self_attn.q_proj.weight", {q, H}});
  out.push_back({p + "self_attn.k_proj.weight", {kv, H}});
  out.push_back({p + "self_attn.v_proj.weight", {kv, H}});
  out.push_back({p + "self_attn.o_proj.weight", {H, q}});
  if (c.attention_bias) {
    out.push_back({p + "self_attn.q_proj.bias", {q}});
    out.push_back({p + "self_attn.k_proj.bias", {kv}});
    out.push_back({p + "self_attn.v_proj.bias", {kv}});
    out.push_back({p + "self_attn.o_proj.bias", {H}});
  }
  if (c.qk_norm) {
    out.push_back({p + "self_attn.q_norm.weight", {hd}});
    out.push_back({p + "self_attn.k_norm.weight", {hd}});
  }
  out.push_back({p + "post_attention_layernorm.weight", {H}});
  out.push_back({p + "mlp.gate_proj.weight", {I, H}});
  out.push_back({p + "mlp.up_proj.weight", {I, H}});
  out.push_back({p + "mlp.down_proj.weight", {H, I}});
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<TensorSpec> target_tensors(const io::ModelConfig& c) {
  std::vector<TensorSpec> out;
  out.push_back({"model.embed_tokens.weight", {c.vocab_size, c.hidden_size}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    add_decoder_layer(out, "model.layers." + std::to_string(i) + ".", c);
  out.push_back({"model.norm.weight", {c.hidden_size}});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {c.vocab_size, c.hidden_size}});
  return out;
}

bool ignorable_target_tensor(const std::string& name, const io::ModelConfig& cfg) {
  return (cfg.tie_word_embeddings && name == "lm_head.weight") || ends_with(name, "rotary_emb.inv_freq");
}

std::vector<TensorSpec> drafter_tensors(const DFlashConfig& d, int64_t target_hidden) {
  const int64_t H = d.model.hidden_size;
  std::vector<TensorSpec> out;
  out.push_back({"fc.weight", {H, d.num_taps() * target_hidden}});
  out.push_back({"hidden_norm.weight", {H}});
  for (int64_t i = 0; i < d.model.num_hidden_layers; ++i)
    add_decoder_layer(out, "layers." + std::to_string(i) + ".", d.model);
  out.push_back({"norm.weight", {H}});
  return out;
}

int64_t parameter_count(const std::vector<TensorSpec>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) {
    int64_t e = 1;
    for (int64_t d : t.shape) e *= d;
    n += e;
  }
  return n;
}

int64_t kv_bytes_per_token(const io::ModelConfig& cfg, int64_t dtype_bytes) {
  return 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * dtype_bytes;
}

}  // namespace flashdraft::model
