#pragma once
// The one decoder layer of every model here: Qwen3 / Llama targets and the
// DFlash drafter (DFLASH.md section 3: the drafter's layer is this layer over
// its block rows, reading context K/V that write_context put in its pool
// layer, with the layer's own mask). Mirrors Hugging Face's Qwen3DecoderLayer:
//   h = input_layernorm(x); q, k, v = qkv(h); q/k per-head norm (Qwen3), RoPE;
//   K/V stored at the rows' slots; attention; x += o_proj(attn);
//   x += down(silu(gate(h2)) * up(h2)) with h2 = post_attention_layernorm(x).
//
// The residual update of each block is fused with the norm that follows it:
// a layer leaves its MLP output in Activations::proj ("pending"), and the
// next begin_layer (or the final norm) adds it to x while normalising.
#include <cstdint>

#include "io/model_config.h"
#include "model/tensor_parallel.h"
#include "model/weight_loader.h"
#include "ops/backend.h"

namespace flashdraft::model {

// This rank's share of a layer (all of it at tensor-parallel size 1):
// heads, kv_heads and intermediate are the rank's; the checkpoint's tensors
// have the totals, and the rank's part starts at head0 / kv_head0 / inter0.
struct LayerGeometry {
  int64_t hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float eps = 1e-6f;
  bool qk_norm = false, bias = false;
  int64_t total_heads = 0, total_kv_heads = 0, total_intermediate = 0;
  int64_t head0 = 0, kv_head0 = 0, inter0 = 0;
  int rank = 0;  // o_proj's bias is added by rank 0 only (the ranks' outputs are summed)

  static LayerGeometry of(const io::ModelConfig& cfg, const Shard& shard = {});
  int64_t q_dim() const { return heads * head_dim; }
  int64_t kv_dim() const { return kv_heads * head_dim; }
  int64_t qkv_dim() const { return q_dim() + 2 * kv_dim(); }
};

struct DecoderLayerWeights {
  ops::OwnedTensor input_norm, post_norm;  // [1, hidden]
  ops::OwnedTensor qkv, qkv_bias;          // [q + 2 kv, hidden], [1, q + 2 kv] (bias: attention_bias only)
  ops::OwnedTensor o_proj, o_bias;         // [hidden, q], [1, hidden]
  ops::OwnedTensor q_norm, k_norm;         // [1, head_dim] (qk_norm only)
  ops::OwnedTensor gate_up, down;          // [2 I, hidden], [hidden, I]
};

// Declares one layer's tensors (this rank's parts of them), under `prefix`
// ("model.layers.3." for a target, "layers.3." for a drafter), fusing q/k/v
// and gate/up.
void declare_decoder_layer(WeightLoader& loader, const std::string& prefix, const LayerGeometry& g,
                           DecoderLayerWeights& w);

// Activation buffers for up to `capacity` rows, grown (never shrunk) by
// reserve, so steady decoding allocates nothing.
struct Activations {
  ops::OwnedTensor x;  // the residual stream, f32
  ops::OwnedTensor xn, qkv, attn, proj, gate_up, act;
  int64_t capacity = 0;
  void reserve(ops::Backend& backend, const LayerGeometry& g, int64_t rows);
};

// xn = norm(x) with weight w over the first n rows; with `pending`, x += proj
// first (the previous layer's MLP output), and x also goes to `tap` where
// given (the previous layer's output, for a drafter).
void begin_layer(ops::Backend& backend, const ops::Tensor& w, float eps, Activations& a, int64_t n, bool pending,
                 const ops::Tensor* tap = nullptr);

// Attention and MLP of one layer over the first n rows, xn ready from
// begin_layer. Leaves the MLP output pending in a.proj. With an active
// shard, o_proj's and down_proj's partial outputs are summed over the ranks.
void decoder_layer(ops::Backend& backend, const DecoderLayerWeights& w, const LayerGeometry& g, Activations& a,
                   int64_t n, const ops::AttnBatch& batch, const ops::AttentionMask& mask, const ops::Tensor& k_cache,
                   const ops::Tensor& v_cache, const ops::Rope& rope, const Shard& shard = {});

}  // namespace flashdraft::model
