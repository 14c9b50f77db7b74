#include "model/qwen3_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "ops/ops.h"

namespace flashdraft::model {

namespace cpu = ops::cpu;

std::unique_ptr<Qwen3Model> Qwen3Model::load(const io::Checkpoint& ckpt, const io::ModelConfig& cfg,
                                             const std::function<void(size_t, size_t)>& progress) {
  const std::string where = ckpt.dir().string() + "/config.json: ";
  if (cfg.num_key_value_heads <= 0 || cfg.num_attention_heads % cfg.num_key_value_heads != 0)
    throw Error(where + "num_attention_heads (" + std::to_string(cfg.num_attention_heads) +
                ") must be a multiple of num_key_value_heads (" + std::to_string(cfg.num_key_value_heads) + ")");
  if (cfg.head_dim <= 0 || cfg.head_dim % 2 != 0)
    throw Error(where + "head_dim must be positive and even for RoPE, found " + std::to_string(cfg.head_dim));
  return std::unique_ptr<Qwen3Model>(new Qwen3Model(cfg, load_qwen3_weights(ckpt, cfg, progress)));
}

Qwen3Model::Qwen3Model(io::ModelConfig cfg, Qwen3Weights weights)
    : cfg_(std::move(cfg)), w_(std::move(weights)), inv_freq_(static_cast<size_t>(cfg_.head_dim / 2)) {
  cpu::rope_inv_freq(cfg_.rope_theta, cfg_.head_dim, inv_freq_.data());
}

KVCache Qwen3Model::new_cache() const {
  return KVCache(cfg_.num_hidden_layers, cfg_.num_key_value_heads * cfg_.head_dim);
}

void Qwen3Model::set_tap_layers(std::vector<int64_t> layer_ids) {
  for (int64_t id : layer_ids)
    if (id < 0 || id >= cfg_.num_hidden_layers)
      throw Error("tap layer " + std::to_string(id) + " does not exist: the model has " +
                  std::to_string(cfg_.num_hidden_layers) + " layers (0-based ids)");
  tap_layers_ = std::move(layer_ids);
  taps_.clear();
}

void Qwen3Model::ensure_buffers(int64_t n) {
  const auto grow = [n](std::vector<float>& v, int64_t width) {
    if (v.size() < static_cast<size_t>(n * width)) v.resize(static_cast<size_t>(n * width));
  };
  const int64_t q_dim = cfg_.num_attention_heads * cfg_.head_dim;
  grow(x_, cfg_.hidden_size);
  grow(xn_, cfg_.hidden_size);
  grow(proj_, cfg_.hidden_size);
  grow(q_, q_dim);
  grow(attn_, q_dim);
  grow(gate_, cfg_.intermediate_size);
  grow(up_, cfg_.intermediate_size);
  positions_.resize(static_cast<size_t>(n));
}

void Qwen3Model::forward(std::span<const int32_t> tokens, KVCache& cache, std::vector<float>& logits,
                         bool all_logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) throw Error("forward: no tokens given");
  if (cache.num_layers() != cfg_.num_hidden_layers ||
      cache.kv_dim() != cfg_.num_key_value_heads * cfg_.head_dim)
    throw Error("forward: the KV cache was not made by this model's new_cache()");
  const int64_t H = cfg_.hidden_size, start = cache.length();

  ensure_buffers(n);
  for (int64_t i = 0; i < n; ++i) positions_[static_cast<size_t>(i)] = start + i;
  cpu::embedding(w_.embed_tokens.data(), cfg_.vocab_size, H, tokens.data(), n, x_.data());
  cache.reserve_append(n);
  if (!tap_layers_.empty()) taps_.assign(static_cast<size_t>(n * H) * tap_layers_.size(), 0.0f);

  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l) {
    attention_block(l, n, cache);
    mlp_block(l, n);
    copy_taps(l, n);
  }
  cache.commit(n);

  // Final norm and lm_head, on every row or just the last.
  const int64_t rows = all_logits ? n : 1;
  const float* last = x_.data() + (n - rows) * H;
  cpu::rmsnorm(last, w_.norm.data(), xn_.data(), rows, H, static_cast<float>(cfg_.rms_norm_eps));
  logits.resize(static_cast<size_t>(rows * cfg_.vocab_size));
  cpu::matmul_wt(xn_.data(), w_.lm_head_data(), nullptr, logits.data(), rows, H, cfg_.vocab_size);
}

void Qwen3Model::attention_block(int64_t layer, int64_t n, KVCache& cache) {
  const auto& L = w_.layers[static_cast<size_t>(layer)];
  const int64_t H = cfg_.hidden_size, hd = cfg_.head_dim;
  const int64_t nh = cfg_.num_attention_heads, nkv = cfg_.num_key_value_heads;
  const int64_t start = cache.length();
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };

  cpu::rmsnorm(x_.data(), L.input_layernorm.data(), xn_.data(), n, H, eps);
  // K and V are projected straight into this layer's cache rows.
  float* k = cache.k(layer) + start * nkv * hd;
  float* v = cache.v(layer) + start * nkv * hd;
  cpu::matmul_wt(xn_.data(), L.q_proj.data(), bias(L.q_bias), q_.data(), n, H, nh * hd);
  cpu::matmul_wt(xn_.data(), L.k_proj.data(), bias(L.k_bias), k, n, H, nkv * hd);
  cpu::matmul_wt(xn_.data(), L.v_proj.data(), bias(L.v_bias), v, n, H, nkv * hd);
  if (cfg_.qk_norm) {  // Qwen3: RMSNorm over each head's vector, before RoPE
    cpu::rmsnorm(q_.data(), L.q_norm.data(), q_.data(), n * nh, hd, eps);
    cpu::rmsnorm(k, L.k_norm.data(), k, n * nkv, hd, eps);
  }
  cpu::rope_neox(q_.data(), positions_.data(), inv_freq_.data(), n, nh, hd);
  cpu::rope_neox(k, positions_.data(), inv_freq_.data(), n, nkv, hd);

  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  cpu::attention(q_.data(), cache.k(layer), cache.v(layer), attn_.data(), n, start + n, start, nh, nkv,
                 hd, scale, /*causal=*/true);
  cpu::matmul_wt(attn_.data(), L.o_proj.data(), bias(L.o_bias), proj_.data(), n, nh * hd, H);
  cpu::add(x_.data(), proj_.data(), n * H);
}

void Qwen3Model::mlp_block(int64_t layer, int64_t n) {
  const auto& L = w_.layers[static_cast<size_t>(layer)];
  const int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size;
  cpu::rmsnorm(x_.data(), L.post_attention_layernorm.data(), xn_.data(), n, H,
               static_cast<float>(cfg_.rms_norm_eps));
  cpu::matmul_wt(xn_.data(), L.gate_proj.data(), nullptr, gate_.data(), n, H, I);
  cpu::matmul_wt(xn_.data(), L.up_proj.data(), nullptr, up_.data(), n, H, I);
  cpu::silu_glu(gate_.data(), up_.data(), gate_.data(), n * I);
  cpu::matmul_wt(gate_.data(), L.down_proj.data(), nullptr, proj_.data(), n, I, H);
  cpu::add(x_.data(), proj_.data(), n * H);
}

void Qwen3Model::copy_taps(int64_t layer, int64_t n) {
  const int64_t H = cfg_.hidden_size, K = static_cast<int64_t>(tap_layers_.size());
  for (int64_t t = 0; t < K; ++t) {
    if (tap_layers_[static_cast<size_t>(t)] != layer) continue;
    for (int64_t r = 0; r < n; ++r)
      std::copy(x_.data() + r * H, x_.data() + (r + 1) * H, taps_.data() + (r * K + t) * H);
  }
}

}  // namespace flashdraft::model
