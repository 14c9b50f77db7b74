#include "model/qwen3_weights.h"

#include <set>
#include <string>

#include "core/error.h"

namespace flashdraft::model {
namespace {

struct Decl {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float>* dest;
};

std::string describe(const io::ModelConfig& cfg) {
  return cfg.model_type + " model with " + std::to_string(cfg.num_hidden_layers) +
         " layers, attention_bias=" + (cfg.attention_bias ? "true" : "false") +
         ", q/k norms=" + (cfg.qk_norm ? "yes" : "no") +
         ", tie_word_embeddings=" + (cfg.tie_word_embeddings ? "true" : "false");
}

bool ignorable(const std::string& name, const io::ModelConfig& cfg) {
  // transformers ties lm_head to the embedding even when a file carries both;
  // some old exports also saved the (recomputed) rotary buffer.
  if (cfg.tie_word_embeddings && name == "lm_head.weight") return true;
  const std::string rotary = "rotary_emb.inv_freq";
  return name.size() >= rotary.size() && name.compare(name.size() - rotary.size(), rotary.size(), rotary) == 0;
}

}  // namespace

Qwen3Weights load_qwen3_weights(const io::Checkpoint& ckpt, const io::ModelConfig& cfg,
                                const LoadProgress& progress) {
  const int64_t H = cfg.hidden_size, I = cfg.intermediate_size, V = cfg.vocab_size;
  const int64_t hd = cfg.head_dim, q_dim = cfg.num_attention_heads * hd,
                kv_dim = cfg.num_key_value_heads * hd;

  Qwen3Weights w;
  w.layers.resize(static_cast<size_t>(cfg.num_hidden_layers));
  std::vector<Decl> decls;
  decls.push_back({"model.embed_tokens.weight", {V, H}, &w.embed_tokens});
  for (int64_t i = 0; i < cfg.num_hidden_layers; ++i) {
    auto& L = w.layers[static_cast<size_t>(i)];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    decls.push_back({p + "input_layernorm.weight", {H}, &L.input_layernorm});
    decls.push_back({p + "self_attn.q_proj.weight", {q_dim, H}, &L.q_proj});
    decls.push_back({p + "self_attn.k_proj.weight", {kv_dim, H}, &L.k_proj});
    decls.push_back({p + "self_attn.v_proj.weight", {kv_dim, H}, &L.v_proj});
    decls.push_back({p + "self_attn.o_proj.weight", {H, q_dim}, &L.o_proj});
    if (cfg.attention_bias) {
      decls.push_back({p + "self_attn.q_proj.bias", {q_dim}, &L.q_bias});
      decls.push_back({p + "self_attn.k_proj.bias", {kv_dim}, &L.k_bias});
      decls.push_back({p + "self_attn.v_proj.bias", {kv_dim}, &L.v_bias});
      decls.push_back({p + "self_attn.o_proj.bias", {H}, &L.o_bias});
    }
    if (cfg.qk_norm) {
      decls.push_back({p + "self_attn.q_norm.weight", {hd}, &L.q_norm});
      decls.push_back({p + "self_attn.k_norm.weight", {hd}, &L.k_norm});
    }
    decls.push_back({p + "post_attention_layernorm.weight", {H}, &L.post_attention_layernorm});
    decls.push_back({p + "mlp.gate_proj.weight", {I, H}, &L.gate_proj});
    decls.push_back({p + "mlp.up_proj.weight", {I, H}, &L.up_proj});
    decls.push_back({p + "mlp.down_proj.weight", {H, I}, &L.down_proj});
  }
  decls.push_back({"model.norm.weight", {H}, &w.norm});
  if (!cfg.tie_word_embeddings) decls.push_back({"lm_head.weight", {V, H}, &w.lm_head});

  // Every checkpoint tensor must be accounted for: an unused one means the
  // config describes a different model than the weights, and the math would
  // be silently wrong.
  std::set<std::string> declared;
  for (const auto& d : decls) declared.insert(d.name);
  for (const auto& name : ckpt.names())
    if (!declared.count(name) && !ignorable(name, cfg))
      throw Error(ckpt.dir().string() + ": tensor '" + name + "' has no place in a " + describe(cfg) +
                  " (as config.json describes it); config and weights do not match");

  size_t total = 0, done = 0;
  for (const auto& d : decls) total += ckpt.get(d.name).nbytes;  // get() names a missing tensor
  if (progress) progress(0, total);
  for (const auto& d : decls) {
    *d.dest = ckpt.load_f32(d.name, d.shape);
    done += ckpt.get(d.name).nbytes;
    if (progress) progress(done, total);
  }
  return w;
}

}  // namespace flashdraft::model
