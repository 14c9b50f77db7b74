#pragma once
// The DFlash block-diffusion drafter (DFLASH.md section 3) over the backend
// seam. It has no embedding and no lm_head of its own: it borrows the
// target's, and runs on the target's backend. Quantized (ops::WeightQuant::
// Fp8, the speculative config's "quantization"), its matmul weights are
// rounded to the fp8 grid at load, and so is a copy of the target's lm head
// that it then reads instead: drafts get cheaper to compute and may differ,
// the verified output does not.
//
// Its KV cache holds context (features of tokens the target committed):
// write_context computes K/V for such rows once, for all layers in one GEMM,
// into the drafter's layers of the shared KVPool at the request's slots.
// draft() runs the block [anchor, MASK ...] through the shared decoder layer:
// the block's own K/V go to the request's next slots (already reserved for
// the verify rows), where the next write_context overwrites them with
// committed context, so rejected drafts need no rollback.
//
// Model code only: the engine decides which rows and blocks run when.
// Not thread-safe: calls reuse the activation buffers.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/batch.h"
#include "model/decoder_layer.h"
#include "model/dflash_config.h"
#include "model/kv_pool.h"
#include "model/qwen3_model.h"
#include "model/step_inputs.h"

namespace flashdraft::model {

class DFlashDrafter {
 public:
  // `drafter_cfg` from load_drafter_model_config(ckpt.dir()). Checks the
  // config against the target (parse_dflash_config) and every tensor's shape
  // (fc width = taps x target hidden, head geometry); a checkpoint tensor
  // with no place in the drafter is an error. The target must outlive the
  // drafter.
  static std::unique_ptr<DFlashDrafter> load(const io::Checkpoint& ckpt, const io::ModelConfig& drafter_cfg,
                                             const Qwen3Model& target, const LoadProgress& progress = {},
                                             ops::WeightQuant quant = ops::WeightQuant::None);
  // The same from a directory.
  static std::unique_ptr<DFlashDrafter> load(const std::filesystem::path& dir, const Qwen3Model& target,
                                             const LoadProgress& progress = {},
                                             ops::WeightQuant quant = ops::WeightQuant::None);
  // Random weights with the config's shapes (--load-format dummy).
  static std::unique_ptr<DFlashDrafter> load_dummy(const std::filesystem::path& dir, const Qwen3Model& target,
                                                   uint64_t seed = 2, ops::WeightQuant quant = ops::WeightQuant::None);

  const DFlashConfig& config() const { return cfg_; }
  ops::WeightQuant quant() const { return quant_; }
  // Tensor parallelism: the target is a sharded rank-0 model
  // (Qwen3Model::load_sharded) and the load calls above load one drafter
  // shard per target shard; these are ranks 1 .. (empty at size 1).
  const std::vector<std::unique_ptr<DFlashDrafter>>& peers() const { return peers_; }
  // The pool layers the drafter uses, one per drafter layer, in order.
  std::vector<KVLayerShape> kv_layers() const;

  // Context K/V for rows of committed tokens. taps: [rows.total_rows(),
  // K * target hidden] in backend memory (the target's taps of those rows, in
  // batch row order); seq s's rows are positions pos0 .. pos0 + n_rows - 1
  // and go to its slots in pool layers [layer_offset, layer_offset + layers).
  void write_context(const ops::Tensor& taps, const BatchContext& rows, KVPool& pool, int64_t layer_offset);
  // The same from host memory (tests, tools).
  void write_context(const float* taps, const BatchContext& rows, KVPool& pool, int64_t layer_offset);
  // write_context() in two halves, as prepare / forward_prepared: the first
  // checks and uploads the rows' positions and slots (min_keys: see
  // StepInputs::build; a recorded write reads them where a step of its
  // context bucket puts them), the second enqueues ops only (so it can be
  // captured and replayed) for taps of those rows.
  void prepare_context(const BatchContext& rows, KVPool& pool, int64_t layer_offset, int64_t min_keys = 0);
  void write_context_prepared(const ops::Tensor& taps, KVPool& pool, int64_t layer_offset);

  // One block per seq: rows [anchors[s], MASK x (n_rows - 1)] at positions
  // pos0 .. pos0 + n_rows - 1, 1 <= n_rows <= block_size, attending to the
  // context at positions < pos0 already in the pool; the block tables must
  // cover the block's positions too (its K/V are stored there). all_logits
  // is ignored. Results stay in backend memory: draft_logits() is [sum over
  // seqs of (n_rows - 1, or its tail_logits), vocab] f32, block rows 1.. of each seq in order
  // (row i predicts position pos0 + i), soft-capped if the config says so.
  void run(std::span<const int32_t> anchors, const BatchContext& blocks, KVPool& pool, int64_t layer_offset);
  // run() in two halves, as Qwen3Model::prepare_batch / forward_prepared: the
  // first checks and uploads (min_keys: see StepInputs::build), the second
  // enqueues ops only, so it can be captured and replayed.
  void prepare(std::span<const int32_t> anchors, const BatchContext& blocks, KVPool& pool, int64_t layer_offset,
               int64_t min_keys = 0);
  void forward_prepared(KVPool& pool, int64_t layer_offset);
  // Grows the buffers (blocks and context writes) for batches within `limits`.
  void reserve(const BatchLimits& limits);
  // Grows the context writes' own buffers (inputs and scratch, apart from
  // the blocks', so a larger write moves nothing a recorded draft uses) for
  // writes within `limits`.
  void reserve_context_writes(const BatchLimits& limits);
  // Scratch bytes per row of a context write (its inputs and activations;
  // not the taps, which the caller holds).
  int64_t context_write_row_bytes() const;
  const ops::Tensor& draft_logits() const { return logits_view_; }
  // The prepared blocks' and context write's flat inputs (see Qwen3Model::step_inputs).
  const StepInputs& block_inputs() const { return inputs_; }
  const StepInputs& context_inputs() const { return write_inputs_; }
  // run(), then the logits downloaded.
  void draft(std::span<const int32_t> anchors, const BatchContext& blocks, KVPool& pool, int64_t layer_offset,
             std::vector<float>& logits);

  // For tests and tools: one request whose context is taps [n_ctx, K * H]
  // (host) at positions 0 .. n_ctx - 1, block of `block_len` rows at n_ctx,
  // in a private pool. logits: [block_len - 1, vocab].
  void draft_contiguous(const float* taps, int64_t n_ctx, int32_t anchor, int64_t block_len,
                        std::vector<float>& logits);

 private:
  DFlashDrafter(DFlashConfig cfg, const Qwen3Model& target);
  // One drafter per shard of `target` (rank 0's returned, owning the others),
  // each declared and then loaded by `load` with its share of `progress`
  // (the shards at once: load_on_every_rank).
  static std::unique_ptr<DFlashDrafter> load_shards(
      const DFlashConfig& cfg, const Qwen3Model& target, ops::WeightQuant quant, const LoadProgress& progress,
      const std::function<void(DFlashDrafter&, const LoadProgress&)>& load);
  void declare(WeightLoader& loader);
  // A quantized drafter's own copy of the target's lm head, rounded.
  void quantize_lm_head();
  void check_pool(const BatchContext& batch, const KVPool& pool, int64_t layer_offset, const char* what) const;

  DFlashConfig cfg_;
  const Qwen3Model& target_;
  ops::Backend& backend_;
  LayerGeometry geo_;
  Shard shard_;  // the target's
  ops::OwnedTensor fc_, hidden_norm_, norm_;  // fc_: this rank's columns of fc.weight
  std::vector<DecoderLayerWeights> layers_;
  ops::OwnedTensor kv_fused_;  // every layer's k_proj then v_proj rows, stacked: [L * 2 * kv_dim, H]
  ops::WeightQuant quant_ = ops::WeightQuant::None;
  ops::OwnedTensor lm_head_;  // quantized drafters only (quantize_lm_head)
  ops::OwnedTensor inv_freq_;
  ops::Rope rope_;

  Activations acts_;
  StepInputs inputs_, write_inputs_;  // the blocks'; the context writes'
  std::vector<int32_t> ids_;
  ops::OwnedTensor ctx_, kv_, selected_, logits_, host_taps_;
  ops::Tensor logits_view_, selected_view_;
  int64_t rows_ = 0;          // of the prepared blocks
  int64_t context_rows_ = 0;  // of the prepared context write
  std::vector<std::unique_ptr<DFlashDrafter>> peers_;
};

}  // namespace flashdraft::model
