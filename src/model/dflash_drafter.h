#pragma once
// The DFlash block-diffusion drafter on the CPU ops (DFLASH.md section 3).
// It has no embedding and no lm_head of its own: it borrows the target's.
//
// Its KV cache holds only context (features of tokens the target committed):
// write_context computes K/V for such rows once, for all layers, into the
// drafter's layers of the shared KVPool at the request's slots. draft() runs
// the block [anchor, MASK ...] over that context; the block's own K/V are
// temporary and never stored, so rejected drafts need no rollback.
//
// Model code only: the engine decides which rows and blocks run when.
// Not thread-safe: calls reuse the activation buffers.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/batch.h"
#include "model/dflash_config.h"
#include "model/kv_pool.h"
#include "model/qwen3_model.h"
#include "model/qwen3_weights.h"

namespace flashdraft::model {

class DFlashDrafter {
 public:
  // `drafter_cfg` from load_drafter_model_config(ckpt.dir()). Checks the
  // config against the target (parse_dflash_config) and every tensor's shape
  // (fc width = taps x target hidden, head geometry); a checkpoint tensor
  // with no place in the drafter is an error. The target must outlive the
  // drafter.
  static std::unique_ptr<DFlashDrafter> load(const io::Checkpoint& ckpt, const io::ModelConfig& drafter_cfg,
                                             const Qwen3Model& target, const LoadProgress& progress = {});
  // The same from a directory.
  static std::unique_ptr<DFlashDrafter> load(const std::filesystem::path& dir, const Qwen3Model& target,
                                             const LoadProgress& progress = {});

  const DFlashConfig& config() const { return cfg_; }
  // The pool layers the drafter uses, one per drafter layer, in order.
  std::vector<KVLayerShape> kv_layers() const;

  // Context K/V for rows of committed tokens. taps: [rows.total_rows(),
  // K * target hidden] (the target's taps of those rows, in batch row order);
  // seq s's rows are positions pos0 .. pos0 + n_rows - 1 and go to its slots
  // in pool layers [layer_offset, layer_offset + num layers).
  void write_context(const float* taps, const BatchContext& rows, KVPool& pool, int64_t layer_offset);

  // One block per seq: rows [anchors[s], MASK x (n_rows - 1)] at positions
  // pos0 .. pos0 + n_rows - 1, 1 <= n_rows <= block_size, attending to the
  // context at positions < pos0 already in the pool (all_logits is ignored).
  // logits: [sum over seqs of (n_rows - 1), vocab], block rows 1.. of each
  // seq in order (row i predicts position pos0 + i), soft-capped if the
  // config says so.
  void draft(std::span<const int32_t> anchors, const BatchContext& blocks, KVPool& pool, int64_t layer_offset,
             std::vector<float>& logits);

  // For tests and tools: one request whose context is taps [n_ctx, K * H]
  // at positions 0 .. n_ctx - 1, block of `block_len` rows at n_ctx, in a
  // private pool. logits: [block_len - 1, vocab].
  void draft_contiguous(const float* taps, int64_t n_ctx, int32_t anchor, int64_t block_len,
                        std::vector<float>& logits);

 private:
  struct Layer {
    std::vector<float> input_layernorm, post_attention_layernorm;
    std::vector<float> q_proj, k_proj, v_proj, o_proj, q_norm, k_norm;
    std::vector<float> gate_proj, up_proj, down_proj;
  };

  DFlashDrafter(DFlashConfig cfg, const Qwen3Model& target);
  void load_weights(const io::Checkpoint& ckpt, const LoadProgress& progress);
  void check_pool(const BatchContext& batch, const KVPool& pool, int64_t layer_offset, bool writes_rows,
                  const char* what) const;
  void attention_block(int64_t layer, const BatchContext& blocks, const KVPool& pool, int64_t layer_offset, int64_t n);
  void mlp_block(int64_t layer, int64_t n);
  void grow(int64_t n);

  DFlashConfig cfg_;
  const Qwen3Model& target_;
  std::vector<float> fc_, hidden_norm_, norm_;
  std::vector<Layer> layers_;
  std::vector<float> kv_fused_;  // every layer's k_proj then v_proj rows, stacked: [L * 2 * kv_dim, H]
  std::vector<float> inv_freq_;

  // Activations, grown to the largest batch seen.
  std::vector<float> x_, xn_, q_, kb_, vb_, attn_, proj_, gate_, up_, ctx_, kv_, logits_rows_;
  std::vector<int32_t> ids_;
  std::vector<int64_t> positions_;
};

}  // namespace flashdraft::model
