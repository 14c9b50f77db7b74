#pragma once
// Qwen3ForCausalLM over the backend seam, mirroring Hugging Face's
// modeling_qwen3.py. Llama is the same network without the per-head q/k
// RMSNorm (config.qk_norm == false). Written once against ops::Backend: the
// CPU backend runs it in fp32, the CUDA backend in bf16.
//
// run_batch() runs many requests at once over the paged KVPool (the engine)
// and leaves logits and taps in backend memory; forward_batch() and forward()
// (one request, contiguous KVCache: CLI, tests) are host conveniences over it.
//
// A model object is not thread-safe: forwards reuse its activation buffers.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/batch.h"
#include "model/decoder_layer.h"
#include "model/kv_cache.h"
#include "model/kv_pool.h"
#include "model/step_inputs.h"
#include "model/tensor_parallel.h"
#include "model/weight_loader.h"
#include "ops/backend.h"
#include "parallel/communicator.h"

namespace flashdraft::model {

class Qwen3Model {
 public:
  // Loads every tensor the config implies, checking names and shapes (see
  // WeightLoader). backend == nullptr: the CPU reference backend.
  static std::unique_ptr<Qwen3Model> load(const io::Checkpoint& ckpt, const io::ModelConfig& cfg,
                                          const LoadProgress& progress = {},
                                          std::shared_ptr<ops::Backend> backend = nullptr);
  // Random weights with the config's exact shapes (--load-format dummy).
  static std::unique_ptr<Qwen3Model> load_dummy(const io::ModelConfig& cfg, std::shared_ptr<ops::Backend> backend,
                                                uint64_t seed = 1);
  // Tensor parallelism (model/tensor_parallel.h): one shard per communicator
  // of `group`, rank r's on backends[r] (ckpt null: dummy weights from
  // `seed`). Returns rank 0's shard, which owns the other ranks' (peers())
  // and the group. Every rank must then make the same calls (the engine's
  // ModelRunner drives them); the one-request conveniences below (forward,
  // host embed / lm_head) are for size 1 only. Throws naming the config
  // field that cannot be split.
  static std::unique_ptr<Qwen3Model> load_sharded(const io::Checkpoint* ckpt, const io::ModelConfig& cfg,
                                                  std::vector<std::shared_ptr<ops::Backend>> backends,
                                                  std::vector<std::unique_ptr<parallel::Communicator>> group,
                                                  const LoadProgress& progress = {}, uint64_t seed = 1);
  const Shard& shard() const { return shard_; }
  // Ranks 1 .. of rank 0's shard (empty at size 1 and on the other ranks).
  const std::vector<std::unique_ptr<Qwen3Model>>& peers() const { return peers_; }
  // Every rank's communicator, rank 0's first (rank 0's shard; for
  // parallel::RankThreads and load_on_every_rank).
  std::vector<parallel::Communicator*> rank_comms() const;
  // This rank's columns of the logits: [vocab_begin(), + vocab_count()) (all at size 1).
  int64_t vocab_begin() const { return shard_.begin(cfg_.vocab_size); }
  int64_t vocab_count() const { return shard_.count(cfg_.vocab_size); }

  // hidden_size, vocab_size, num_hidden_layers, ... as read from config.json.
  const io::ModelConfig& config() const { return cfg_; }
  ops::Backend& backend() const { return *backend_; }
  const std::shared_ptr<ops::Backend>& shared_backend() const { return backend_; }
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
  // harmless and gets overwritten by a later forward. Results stay in backend
  // memory: logits_tensor() is [batch.logit_rows(), vocab] f32, per request in
  // order, every row if all_logits else its last row; taps_tensor() covers
  // all rows in row order. Bad metadata (rows, block tables, pool layers) or
  // token ids are an Error before any KV is written.
  void run_batch(std::span<const int32_t> tokens, const BatchContext& batch, KVPool& pool);
  // run_batch in two halves, for a caller that records the second as a graph
  // (Backend::capture) and replays it: prepare_batch checks the batch, uploads
  // its inputs and sizes the buffers (min_keys: see StepInputs::build);
  // forward_prepared enqueues ops only. Between the two the caller may
  // overwrite input_ids() on the backend (drafts that never visit the host).
  void prepare_batch(std::span<const int32_t> tokens, const BatchContext& batch, KVPool& pool, int64_t min_keys = 0);
  void forward_prepared(KVPool& pool);
  ops::Tensor input_ids() const { return inputs_.ids(); }
  // The prepared step's flat inputs (overlapped scheduling fixes them on the backend: StepInputs::follow).
  const StepInputs& step_inputs() const { return inputs_; }
  // Grows the buffers for batches within `limits`, so that such batches move
  // none (buffer_moves()).
  void reserve(const BatchLimits& limits);
  // [rows, vocab_count()]: this rank's vocabulary shard (all of it at size 1),
  // or [rows, vocab] after gather_logits().
  const ops::Tensor& logits_tensor() const { return logits_view_; }
  // The greedy token of each row of `logits` (this rank's shard of them, as
  // the lm_head leaves them) into out i32 [n, 1]: Backend::argmax at size 1;
  // else each shard's argmax_key, the smallest over the ranks taken.
  void argmax(const ops::Tensor& logits, const ops::Tensor& out);
  // Size > 1: every rank's logits of this forward gathered, so that
  // logits_tensor() is the whole [rows, vocab] on every rank (sampling with
  // filters, penalties and log-probabilities need all of it). Size 1: nothing.
  void gather_logits();
  // run_batch, then the logits downloaded.
  void forward_batch(std::span<const int32_t> tokens, const BatchContext& batch, KVPool& pool,
                     std::vector<float>& logits);

  // The pool layers run_batch uses: one per decoder layer.
  std::vector<KVLayerShape> kv_layers() const;

  // The token embedding times `scale`: ids i32 [n, 1] -> out [n, hidden] (backend memory).
  void embed(const ops::Tensor& ids, const ops::Tensor& out, float scale = 1.0f) const;
  // The output head (tied or untied) on raw rows, no final norm: logits[n,
  // vocab] f32 = x[n, hidden] · W^T. (The DFlash drafter applies its own norm.)
  void lm_head(const ops::Tensor& x, const ops::Tensor& logits) const;
  // The output head's weight: this rank's [vocab_count(), hidden] (the
  // embedding's rows when tied), as prepared for matmul.
  ops::Tensor lm_head_weight() const;
  // Host versions of the two, for tests and tools. embed throws on ids outside the vocabulary.
  void embed(std::span<const int32_t> ids, float* out) const;
  void lm_head(const float* x, int64_t n, float* logits) const;

  // Hidden-state taps for DFlash: after set_tap_layers({t0, t1, ...}), each
  // forward also fills taps with [n, K * hidden]: per token row, the output
  // of decoder layer t0 (residual stream after it, before the next layer's
  // norm; HF hidden_states[t0 + 1]), then t1, ..., in list order.
  void set_tap_layers(std::vector<int64_t> layer_ids);
  const std::vector<int64_t>& tap_layers() const { return tap_layers_; }
  const ops::Tensor& taps_tensor() const { return taps_view_; }  // backend memory
  std::vector<float> taps() const;                               // a host copy (empty without taps)
  // Between prepare_batch and forward_prepared: this forward writes its taps
  // into dst ([rows, K * hidden], the activation dtype) instead of the
  // model's own buffer, and taps_tensor() is dst until the next prepare_batch
  // (a caller that keeps the taps of a step elsewhere saves a copy). Not in
  // a recorded forward: its tap buffer is part of the recording.
  void set_taps_destination(const ops::Tensor& dst);
  // Called by each forward once its last tap is written, with the layers
  // after it still to come (empty: none). Work it enqueues that reads only
  // the taps can run beside the rest of the forward (Backend::begin_beside).
  void on_taps_written(std::function<void()> fn) { taps_written_ = std::move(fn); }

 private:
  Qwen3Model(io::ModelConfig cfg, std::shared_ptr<ops::Backend> backend, Shard shard = {});
  void require_one_rank(const char* what) const;
  void declare(WeightLoader& loader);
  void check_batch(std::span<const int32_t> tokens, const BatchContext& batch, const KVPool& pool) const;
  void check_ids(std::span<const int32_t> tokens) const;
  // Rows [0, n) of layer's column slice of the taps (none: not tapped).
  std::optional<ops::Tensor> tap_of(int64_t layer, int64_t n) const;

  io::ModelConfig cfg_;
  std::shared_ptr<ops::Backend> backend_;
  Shard shard_;
  LayerGeometry geo_;
  ops::OwnedTensor embed_tokens_, norm_, lm_head_;  // lm_head_ empty when tied
  std::vector<DecoderLayerWeights> layers_;
  ops::OwnedTensor inv_freq_;
  ops::Rope rope_;
  std::vector<int64_t> tap_layers_;
  std::function<void()> taps_written_;

  Activations acts_;
  StepInputs inputs_;
  ops::OwnedTensor logits_, taps_, selected_;  // grown as needed
  ops::Tensor logits_view_, taps_view_;        // this forward's rows of them
  ops::Tensor selected_view_;

  // Tensor parallelism (size > 1): the embedding's global -> local row map
  // (other ranks' tokens -> the zero row past this rank's), lookup and
  // argmax scratch, the gathered logits; rank 0 owns the peers and group.
  ops::OwnedTensor vocab_map_, keys_, gathered_, full_logits_;
  mutable ops::OwnedTensor local_ids_;
  std::vector<std::unique_ptr<parallel::Communicator>> group_;
  std::vector<std::unique_ptr<Qwen3Model>> peers_;
};

}  // namespace flashdraft::model
