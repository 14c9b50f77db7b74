#pragma once
// Qwen3ForCausalLM on the CPU ops, mirroring Hugging Face's modeling_qwen3.py.
// Llama is the same network without the per-head q/k RMSNorm
// (config.qk_norm == false). fp32 compute; bf16/f16 weights widened at load.
//
// A model object is not thread-safe: forward() reuses its activation buffers.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/kv_cache.h"
#include "model/qwen3_weights.h"

namespace flashdraft::model {

class Qwen3Model {
 public:
  static std::unique_ptr<Qwen3Model> load(const io::Checkpoint& ckpt, const io::ModelConfig& cfg,
                                          const std::function<void(size_t, size_t)>& progress = {});

  const io::ModelConfig& config() const { return cfg_; }
  KVCache new_cache() const;

  // Runs `tokens` at positions cache.length() .. +n-1, appending their K/V to
  // the cache. logits becomes [n, vocab] if all_logits, else [1, vocab] for
  // the last token. On an exception the cache keeps its previous length.
  void forward(std::span<const int32_t> tokens, KVCache& cache, std::vector<float>& logits,
               bool all_logits = false);

  // Hidden-state taps for DFlash: after set_tap_layers({t0, t1, ...}), each
  // forward also fills taps() with [n, K * hidden]: per token row, the output
  // of decoder layer t0 (residual stream after it, before the next layer's
  // norm; HF hidden_states[t0 + 1]), then t1, ..., in list order.
  void set_tap_layers(std::vector<int64_t> layer_ids);
  const std::vector<int64_t>& tap_layers() const { return tap_layers_; }
  const std::vector<float>& taps() const { return taps_; }

 private:
  Qwen3Model(io::ModelConfig cfg, Qwen3Weights weights);
  void attention_block(int64_t layer, int64_t n, KVCache& cache);
  void mlp_block(int64_t layer, int64_t n);
  void copy_taps(int64_t layer, int64_t n);
  void ensure_buffers(int64_t n);

  io::ModelConfig cfg_;
  Qwen3Weights w_;
  std::vector<float> inv_freq_;
  std::vector<int64_t> tap_layers_;
  std::vector<float> taps_;

  // Activations, grown to the largest n seen (row-major, n rows).
  std::vector<float> x_, xn_, q_, attn_, proj_, gate_, up_;
  std::vector<int64_t> positions_;
};

}  // namespace flashdraft::model
