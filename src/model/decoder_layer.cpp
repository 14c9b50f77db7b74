#include "model/decoder_layer.h"

#include <cmath>

#include "model/activation_buffers.h"

namespace flashdraft::model {

LayerGeometry LayerGeometry::of(const io::ModelConfig& cfg, const Shard& shard) {
  LayerGeometry g;
  g.hidden = cfg.hidden_size;
  g.total_intermediate = cfg.intermediate_size;
  g.total_heads = cfg.num_attention_heads;
  g.total_kv_heads = cfg.num_key_value_heads;
  g.intermediate = shard.count(g.total_intermediate);
  g.heads = shard.count(g.total_heads);
  g.kv_heads = shard.kv_count(g.total_kv_heads);
  g.inter0 = shard.begin(g.total_intermediate);
  g.head0 = shard.begin(g.total_heads);
  g.kv_head0 = shard.kv_begin(g.total_kv_heads);
  g.rank = shard.rank;
  g.head_dim = cfg.head_dim;
  g.eps = static_cast<float>(cfg.rms_norm_eps);
  g.qk_norm = cfg.qk_norm;
  g.bias = cfg.attention_bias;
  return g;
}

void declare_decoder_layer(WeightLoader& loader, const std::string& p, const LayerGeometry& g,
                           DecoderLayerWeights& w) {
  const int64_t H = g.hidden, I = g.intermediate, hd = g.head_dim, q = g.q_dim(), kv = g.kv_dim();
  // The checkpoint's (whole) sizes, and this rank's part of each.
  const int64_t I_all = g.total_intermediate, q_all = g.total_heads * hd, kv_all = g.total_kv_heads * hd;
  const WeightLoader::Part q_rows{0, g.head0 * hd, q}, kv_rows{0, g.kv_head0 * hd, kv}, q_cols{1, g.head0 * hd, q};
  const WeightLoader::Part i_rows{0, g.inter0, I}, i_cols{1, g.inter0, I};
  const auto str = [](int64_t v) { return std::to_string(v); };
  const std::string hidden = "hidden_size " + str(H);
  const std::string heads = "num_attention_heads " + str(g.total_heads) + " x head_dim " + str(hd);
  const std::string kv_heads = "num_key_value_heads " + str(g.total_kv_heads) + " x head_dim " + str(hd);
  w.input_norm = loader.alloc(1, H);
  w.post_norm = loader.alloc(1, H);
  w.qkv = loader.alloc(q + 2 * kv, H);
  w.o_proj = loader.alloc(H, q);
  w.gate_up = loader.alloc(2 * I, H);
  w.down = loader.alloc(H, I);
  for (ops::OwnedTensor* m : {&w.qkv, &w.o_proj, &w.down}) loader.matmul_weight(*m);
  loader.glu_weight(w.gate_up);
  loader.add(p + "input_layernorm.weight", {H}, w.input_norm.t, hidden);
  loader.add(p + "self_attn.q_proj.weight", {q_all, H}, w.qkv.t.row_slice(0, q), heads + ", " + hidden, q_rows);
  loader.add(p + "self_attn.k_proj.weight", {kv_all, H}, w.qkv.t.row_slice(q, kv), kv_heads + ", " + hidden, kv_rows);
  loader.add(p + "self_attn.v_proj.weight", {kv_all, H}, w.qkv.t.row_slice(q + kv, kv), kv_heads + ", " + hidden,
             kv_rows);
  loader.add(p + "self_attn.o_proj.weight", {H, q_all}, w.o_proj.t, hidden + ", " + heads, q_cols);
  if (g.bias) {
    w.qkv_bias = loader.alloc(1, q + 2 * kv);
    w.o_bias = loader.alloc(1, H);
    loader.add(p + "self_attn.q_proj.bias", {q_all}, w.qkv_bias.t.col_slice(0, q), "", q_rows);
    loader.add(p + "self_attn.k_proj.bias", {kv_all}, w.qkv_bias.t.col_slice(q, kv), "", kv_rows);
    loader.add(p + "self_attn.v_proj.bias", {kv_all}, w.qkv_bias.t.col_slice(q + kv, kv), "", kv_rows);
    loader.add(p + "self_attn.o_proj.bias", {H}, w.o_bias.t);
  }
  if (g.qk_norm) {
    w.q_norm = loader.alloc(1, hd);
    w.k_norm = loader.alloc(1, hd);
    loader.add(p + "self_attn.q_norm.weight", {hd}, w.q_norm.t, "head_dim " + str(hd));
    loader.add(p + "self_attn.k_norm.weight", {hd}, w.k_norm.t, "head_dim " + str(hd));
  }
  const std::string inter = "intermediate_size " + str(I_all);
  loader.add(p + "post_attention_layernorm.weight", {H}, w.post_norm.t, hidden);
  loader.add(p + "mlp.gate_proj.weight", {I_all, H}, w.gate_up.t.row_slice(0, I), inter + ", " + hidden, i_rows);
  loader.add(p + "mlp.up_proj.weight", {I_all, H}, w.gate_up.t.row_slice(I, I), inter + ", " + hidden, i_rows);
  loader.add(p + "mlp.down_proj.weight", {H, I_all}, w.down.t, hidden + ", " + inter, i_cols);
}

void Activations::reserve(ops::Backend& backend, const LayerGeometry& g, int64_t rows) {
  if (rows <= capacity) return;
  const int64_t n = std::max(rows, capacity * 2);
  const ops::DType dt = backend.activation_dtype();
  x = backend.alloc_tensor(ops::DType::F32, n, g.hidden);  // the residual stream is f32 (backend.h)
  xn = backend.alloc_tensor(dt, n, g.hidden);
  qkv = backend.alloc_tensor(dt, n, g.qkv_dim());
  attn = backend.alloc_tensor(dt, n, g.q_dim());
  proj = backend.alloc_tensor(dt, n, g.hidden);
  gate_up = backend.alloc_tensor(dt, n, 2 * g.intermediate);
  act = backend.alloc_tensor(dt, n, g.intermediate);
  capacity = n;
  ++buffer_moves();
}

void begin_layer(ops::Backend& backend, const ops::Tensor& w, float eps, Activations& a, int64_t n, bool pending,
                 const ops::Tensor* tap) {
  const ops::Tensor x = a.x.t.row_slice(0, n), xn = a.xn.t.row_slice(0, n);
  if (pending) {
    backend.add_rmsnorm(x, a.proj.t.row_slice(0, n), w, xn, eps, tap);
  } else {
    backend.rmsnorm(x, w, xn, eps);
    if (tap) backend.copy(x, *tap);
  }
}

void decoder_layer(ops::Backend& be, const DecoderLayerWeights& w, const LayerGeometry& g, Activations& a, int64_t n,
                   const ops::AttnBatch& batch, const ops::AttentionMask& mask, const ops::Tensor& k_cache,
                   const ops::Tensor& v_cache, const ops::Rope& rope, const Shard& shard) {
  const auto rows = [n](const ops::OwnedTensor& t) { return t.t.row_slice(0, n); };
  const auto bias = [](const ops::OwnedTensor& t) { return t.t.empty() ? nullptr : &t.t; };
  const ops::Tensor qkv = rows(a.qkv);
  const ops::Tensor q = qkv.col_slice(0, g.q_dim());

  be.matmul_rope_store_kv(rows(a.xn), w.qkv.t, bias(w.qkv_bias), qkv, g.heads, g.kv_heads, g.head_dim,
                          g.qk_norm ? &w.q_norm.t : nullptr, g.qk_norm ? &w.k_norm.t : nullptr, batch.positions, rope,
                          g.eps, batch.slots, k_cache, v_cache);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(g.head_dim)));
  be.paged_attention(q, k_cache, v_cache, rows(a.attn), batch, mask, g.heads, g.kv_heads, g.head_dim, scale);
  be.matmul(rows(a.attn), w.o_proj.t, g.rank == 0 ? bias(w.o_bias) : nullptr, rows(a.proj));
  if (shard.active()) shard.comm->all_reduce_sum(be, rows(a.proj));

  be.add_rmsnorm(rows(a.x), rows(a.proj), w.post_norm.t, rows(a.xn), g.eps, nullptr);
  be.matmul_silu_glu(rows(a.xn), w.gate_up.t, rows(a.gate_up), rows(a.act));
  be.matmul(rows(a.act), w.down.t, nullptr, rows(a.proj));
  if (shard.active()) shard.comm->all_reduce_sum(be, rows(a.proj));
}

}  // namespace flashdraft::model
