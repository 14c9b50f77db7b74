#pragma once
// Qwen3ForCausalLM on the CPU ops, mirroring Hugging Face's modeling_qwen3.py.
// Llama is the same network without the per-head q/k RMSNorm
// (config.qk_norm == false). fp32 compute; bf16/f16 weights widened at load.
//
// Two entry points share every layer's code and differ only in where K/V
// live: forward() appends to one request's contiguous KVCache (CLI, tests),
// forward_batch() runs many requests at once over the paged KVPool (engine).
//
// A model object is not thread-safe: forwards reuse its activation buffers.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/kv_pool.h"
#include "model/qwen3_weights.h"
#include "ops/ops.h"

namespace flashdraft::model {

class Qwen3Model {
 public:
  static std::unique_ptr<Qwen3Model> load(const io::Checkpoint& ckpt, const io::ModelConfig& cfg,
                                          const std::function<void(size_t, size_t)>& progress = {});

  // hidden_size, vocab_size, num_hidden_layers, ... as read from config.json.
  const io::ModelConfig& config() const { return cfg_; }
  KVCache new_cache() const;

  // Runs `tokens` at positions cache.length() .. +n-1, appending their K/V to
  // the cache. logits becomes [n, vocab] if all_logits, else [1, vocab] for
  // the last token. On an exception the cache keeps its previous length.
  void forward(std::span<const int32_t> tokens, KVCache& cache, std::vector<float>& logits, bool all_logits = false);

  // One batched forward over several requests (prefill chunks, verify rows,
  // decode rows mixed). tokens: batch.total_rows() ids, grouped by request
  // as batch.seqs says. Each row's K/V is written to its request's slot in
  // pool layers [0, num_hidden_layers) before attention; positions past a
  // request's rows are never read, so stale K/V there (rejected drafts) is
  // harmless and gets overwritten by a later forward. logits becomes
  // [batch.logit_rows(), vocab]: per request in order, every row if
  // all_logits else its last row. taps() covers all rows in row order.
  // Bad metadata (rows, block tables, pool layers) is an Error before any
  // KV is written.
  void forward_batch(std::span<const int32_t> tokens, const BatchContext& batch, KVPool& pool,
                     std::vector<float>& logits);

  // The pool layers forward_batch uses: one per decoder layer.
  std::vector<KVLayerShape> kv_layers() const;

  // The token embedding, out: [ids.size(), hidden_size]. Throws on ids outside the vocabulary.
  void embed(std::span<const int32_t> ids, float* out) const;
  // The output head (tied or untied) on raw rows, no final norm:
  // logits[n, vocab] = x[n, hidden] · W^T. (The DFlash drafter applies its own norm.)
  void lm_head(const float* x, int64_t n, float* logits) const;

  // Hidden-state taps for DFlash: after set_tap_layers({t0, t1, ...}), each
  // forward also fills taps() with [n, K * hidden]: per token row, the output
  // of decoder layer t0 (residual stream after it, before the next layer's
  // norm; HF hidden_states[t0 + 1]), then t1, ..., in list order.
  void set_tap_layers(std::vector<int64_t> layer_ids);
  const std::vector<int64_t>& tap_layers() const { return tap_layers_; }
  const std::vector<float>& taps() const { return taps_; }

 private:
  Qwen3Model(io::ModelConfig cfg, Qwen3Weights weights);
  void check_batch(std::span<const int32_t> tokens, const BatchContext& batch, const KVPool& pool) const;
  // Embedding, all decoder layers and taps for n rows at positions_[0..n).
  // attend(layer, n) finds this layer's q_, k_, v_ ready (normed, rotated),
  // stores k_/v_ in its cache and writes attn_.
  template <class Attend>
  void run_layers(std::span<const int32_t> tokens, Attend&& attend);
  void project_qkv(int64_t layer, int64_t n);
  void finish_attention(int64_t layer, int64_t n);
  void mlp_block(int64_t layer, int64_t n);
  void copy_taps(int64_t layer, int64_t n);
  // Final norm of x_ rows [src, src + count) into xn_ rows from dst.
  void final_norm(int64_t src, int64_t count, int64_t dst);
  void ensure_buffers(int64_t n);

  io::ModelConfig cfg_;
  Qwen3Weights w_;
  std::vector<float> inv_freq_;
  std::vector<int64_t> tap_layers_;
  std::vector<float> taps_;

  // Activations, grown to the largest n seen (row-major, n rows).
  std::vector<float> x_, xn_, q_, k_, v_, attn_, proj_, gate_, up_;
  std::vector<int64_t> positions_;
  std::vector<ops::cpu::PagedSeq> paged_seqs_;
};

}  // namespace flashdraft::model
