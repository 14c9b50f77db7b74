#include "model/qwen3_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "model/activation_buffers.h"
#include "ops/ops.h"

namespace flashdraft::model {

namespace cpu = ops::cpu;

namespace {

const float* bias_or_null(const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); }

}  // namespace

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

std::vector<KVLayerShape> Qwen3Model::kv_layers() const {
  return std::vector<KVLayerShape>(static_cast<size_t>(cfg_.num_hidden_layers),
                                   KVLayerShape{cfg_.num_key_value_heads, cfg_.head_dim});
}

void Qwen3Model::embed(std::span<const int32_t> ids, float* out) const {
  cpu::embedding(w_.embed_tokens.data(), cfg_.vocab_size, cfg_.hidden_size, ids.data(),
                 static_cast<int64_t>(ids.size()), out);
}

void Qwen3Model::lm_head(const float* x, int64_t n, float* logits) const {
  cpu::matmul_wt(x, w_.lm_head_data(), nullptr, logits, n, cfg_.hidden_size, cfg_.vocab_size);
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
  const int64_t q_dim = cfg_.num_attention_heads * cfg_.head_dim;
  const int64_t kv_dim = cfg_.num_key_value_heads * cfg_.head_dim;
  grow_rows(x_, n, cfg_.hidden_size);
  grow_rows(xn_, n, cfg_.hidden_size);
  grow_rows(proj_, n, cfg_.hidden_size);
  grow_rows(q_, n, q_dim);
  grow_rows(k_, n, kv_dim);
  grow_rows(v_, n, kv_dim);
  grow_rows(attn_, n, q_dim);
  grow_rows(gate_, n, cfg_.intermediate_size);
  grow_rows(up_, n, cfg_.intermediate_size);
  if (positions_.size() < static_cast<size_t>(n)) positions_.resize(static_cast<size_t>(n));
}

template <class Attend>
void Qwen3Model::run_layers(std::span<const int32_t> tokens, Attend&& attend) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  embed(tokens, x_.data());
  if (!tap_layers_.empty()) taps_.assign(static_cast<size_t>(n * cfg_.hidden_size) * tap_layers_.size(), 0.0f);
  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l) {
    project_qkv(l, n);
    attend(l, n);
    finish_attention(l, n);
    mlp_block(l, n);
    copy_taps(l, n);
  }
}

void Qwen3Model::forward(std::span<const int32_t> tokens, KVCache& cache, std::vector<float>& logits, bool all_logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) throw Error("forward: no tokens given");
  const int64_t kv_dim = cfg_.num_key_value_heads * cfg_.head_dim;
  if (cache.num_layers() != cfg_.num_hidden_layers || cache.kv_dim() != kv_dim)
    throw Error("forward: the KV cache was not made by this model's new_cache()");
  const int64_t start = cache.length();
  const int64_t hd = cfg_.head_dim, nh = cfg_.num_attention_heads, nkv = cfg_.num_key_value_heads;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));

  ensure_buffers(n);
  for (int64_t i = 0; i < n; ++i) positions_[static_cast<size_t>(i)] = start + i;
  cache.reserve_append(n);
  run_layers(tokens, [&](int64_t l, int64_t rows) {
    std::copy_n(k_.data(), rows * kv_dim, cache.k(l) + start * kv_dim);
    std::copy_n(v_.data(), rows * kv_dim, cache.v(l) + start * kv_dim);
    cpu::attention(q_.data(), cache.k(l), cache.v(l), attn_.data(), rows, start + rows, start, nh, nkv, hd, scale,
                   /*causal=*/true);
  });
  cache.commit(n);

  const int64_t rows = all_logits ? n : 1;
  final_norm(n - rows, rows, 0);
  logits.resize(static_cast<size_t>(rows * cfg_.vocab_size));
  lm_head(xn_.data(), rows, logits.data());
}

void Qwen3Model::check_batch(std::span<const int32_t> tokens, const BatchContext& batch, const KVPool& pool) const {
  const std::string what = "forward_batch: ";
  if (batch.seqs.empty()) throw Error(what + "the batch has no requests");
  if (pool.num_layers() < cfg_.num_hidden_layers)
    throw Error(what + "the KV pool has " + std::to_string(pool.num_layers()) + " layers, the model needs " +
                std::to_string(cfg_.num_hidden_layers));
  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l)
    if (pool.shape(l).kv_heads != cfg_.num_key_value_heads || pool.shape(l).head_dim != cfg_.head_dim)
      throw Error(what + "KV pool layer " + std::to_string(l) + " is " + std::to_string(pool.shape(l).kv_heads) +
                  " kv heads x " + std::to_string(pool.shape(l).head_dim) + ", the model needs " +
                  std::to_string(cfg_.num_key_value_heads) + " x " + std::to_string(cfg_.head_dim));
  const int64_t bs = pool.block_size();
  int64_t next_row = 0;
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    const SeqSlice& s = batch.seqs[i];
    const std::string seq = what + "request " + std::to_string(i) + " of the batch: ";
    if (s.row_begin != next_row)
      throw Error(seq + "rows must follow the previous request's, expected row_begin " + std::to_string(next_row) +
                  ", found " + std::to_string(s.row_begin));
    if (s.n_rows <= 0) throw Error(seq + "n_rows must be positive, found " + std::to_string(s.n_rows));
    if (s.pos0 < 0) throw Error(seq + "pos0 must be >= 0, found " + std::to_string(s.pos0));
    const int64_t end = s.pos0 + s.n_rows;
    if (static_cast<int64_t>(s.block_table.size()) * bs < end)
      throw Error(seq + "its block table of " + std::to_string(s.block_table.size()) + " blocks of " +
                  std::to_string(bs) + " does not cover positions up to " + std::to_string(end - 1));
    for (int64_t b = 0; b < (end + bs - 1) / bs; ++b) {
      const int32_t id = s.block_table[static_cast<size_t>(b)];
      if (id < 0 || id >= pool.num_blocks())
        throw Error(seq + "block table entry " + std::to_string(b) + " is block " + std::to_string(id) +
                    ", the pool has blocks [0, " + std::to_string(pool.num_blocks()) + ")");
    }
    next_row += s.n_rows;
  }
  if (static_cast<int64_t>(tokens.size()) != next_row)
    throw Error(what + std::to_string(tokens.size()) + " tokens given for a batch of " + std::to_string(next_row) +
                " rows");
}

void Qwen3Model::forward_batch(std::span<const int32_t> tokens, const BatchContext& batch, KVPool& pool,
                               std::vector<float>& logits) {
  check_batch(tokens, batch, pool);
  const int64_t n = static_cast<int64_t>(tokens.size()), bs = pool.block_size();
  const int64_t hd = cfg_.head_dim, nh = cfg_.num_attention_heads, nkv = cfg_.num_key_value_heads;
  const int64_t kv_dim = nkv * hd;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));

  ensure_buffers(n);
  paged_seqs_.clear();
  for (const SeqSlice& s : batch.seqs) {
    for (int64_t i = 0; i < s.n_rows; ++i) positions_[static_cast<size_t>(s.row_begin + i)] = s.pos0 + i;
    paged_seqs_.push_back(cpu::PagedSeq{s.row_begin, s.n_rows, s.pos0, s.block_table.data()});
  }
  run_layers(tokens, [&](int64_t l, int64_t) {
    float* kp = pool.k(l);
    float* vp = pool.v(l);
    for (const SeqSlice& s : batch.seqs)
      for (int64_t i = 0; i < s.n_rows; ++i) {
        const int64_t slot = slot_of(s.block_table, bs, s.pos0 + i), row = s.row_begin + i;
        std::copy_n(k_.data() + row * kv_dim, kv_dim, kp + slot * kv_dim);
        std::copy_n(v_.data() + row * kv_dim, kv_dim, vp + slot * kv_dim);
      }
    cpu::paged_attention(q_.data(), kp, vp, attn_.data(), paged_seqs_.data(), static_cast<int64_t>(paged_seqs_.size()),
                         bs, nh, nkv, hd, scale);
  });

  int64_t out_rows = 0;
  for (const SeqSlice& s : batch.seqs) {
    const int64_t rows = s.all_logits ? s.n_rows : 1;
    final_norm(s.row_begin + s.n_rows - rows, rows, out_rows);
    out_rows += rows;
  }
  logits.resize(static_cast<size_t>(out_rows * cfg_.vocab_size));
  lm_head(xn_.data(), out_rows, logits.data());
}

void Qwen3Model::project_qkv(int64_t layer, int64_t n) {
  const auto& L = w_.layers[static_cast<size_t>(layer)];
  const int64_t H = cfg_.hidden_size, hd = cfg_.head_dim;
  const int64_t nh = cfg_.num_attention_heads, nkv = cfg_.num_key_value_heads;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);

  cpu::rmsnorm(x_.data(), L.input_layernorm.data(), xn_.data(), n, H, eps);
  cpu::matmul_wt(xn_.data(), L.q_proj.data(), bias_or_null(L.q_bias), q_.data(), n, H, nh * hd);
  cpu::matmul_wt(xn_.data(), L.k_proj.data(), bias_or_null(L.k_bias), k_.data(), n, H, nkv * hd);
  cpu::matmul_wt(xn_.data(), L.v_proj.data(), bias_or_null(L.v_bias), v_.data(), n, H, nkv * hd);
  if (cfg_.qk_norm) {  // Qwen3: RMSNorm over each head's vector, before RoPE
    cpu::rmsnorm(q_.data(), L.q_norm.data(), q_.data(), n * nh, hd, eps);
    cpu::rmsnorm(k_.data(), L.k_norm.data(), k_.data(), n * nkv, hd, eps);
  }
  cpu::rope_neox(q_.data(), positions_.data(), inv_freq_.data(), n, nh, hd);
  cpu::rope_neox(k_.data(), positions_.data(), inv_freq_.data(), n, nkv, hd);
}

void Qwen3Model::finish_attention(int64_t layer, int64_t n) {
  const auto& L = w_.layers[static_cast<size_t>(layer)];
  const int64_t H = cfg_.hidden_size, q_dim = cfg_.num_attention_heads * cfg_.head_dim;
  cpu::matmul_wt(attn_.data(), L.o_proj.data(), bias_or_null(L.o_bias), proj_.data(), n, q_dim, H);
  cpu::add(x_.data(), proj_.data(), n * H);
}

void Qwen3Model::mlp_block(int64_t layer, int64_t n) {
  const auto& L = w_.layers[static_cast<size_t>(layer)];
  const int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size;
  cpu::rmsnorm(x_.data(), L.post_attention_layernorm.data(), xn_.data(), n, H, static_cast<float>(cfg_.rms_norm_eps));
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

void Qwen3Model::final_norm(int64_t src, int64_t count, int64_t dst) {
  const int64_t H = cfg_.hidden_size;
  cpu::rmsnorm(x_.data() + src * H, w_.norm.data(), xn_.data() + dst * H, count, H,
               static_cast<float>(cfg_.rms_norm_eps));
}

}  // namespace flashdraft::model
