#pragma once
// Turns one scheduled step into model calls: one batched drafter pass that
// drafts for every decoding request, one batched target forward over all the
// step's rows (prefill chunks, verify rows [anchor, d1..dk], plain decode rows
// when there is no drafter) with one BatchContext, sampling and draft
// acceptance on the backend (Backend::accept over every entry's logits rows,
// each request's own seed and filters), and, once the engine knows what was
// committed, one batched write of the drafter's context K/V for the newly
// committed rows. Logits stay in backend memory: a step downloads two ints
// per entry. Stops and request state are the engine's business.
//
// The pool holds the target's layers at [0, L_target) and the drafter's at
// [L_target, L_target + L_draft); both read the request's one block table.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/block_manager.h"
#include "engine/penalty_step.h"
#include "engine/scheduler.h"
#include "model/batch.h"
#include "model/dflash_drafter.h"
#include "model/kv_pool.h"
#include "model/qwen3_model.h"

namespace flashdraft::engine {

class ModelRunner {
 public:
  // drafter may be null (plain decoding). Target taps are switched on only
  // with a drafter, at the drafter's target_layer_ids.
  ModelRunner(model::Qwen3Model& target, model::DFlashDrafter* drafter, int64_t num_blocks, int64_t block_size);

  // What the target decided for one plan entry: a decode entry keeps
  // drafts(i)[0, accepted) and then `token` (its bonus, or its one sampled
  // token without drafts); a prefill entry's token is sampled from its last
  // row (meaningful on the chunk that completes the prefill; accepted is 0).
  // token is -1 when the logits could not be sampled (NaN, +inf, all -inf).
  struct Verdict {
    int32_t accepted = 0;
    int32_t token = -1;
  };

  // Drafts (decode entries with rows > 1), runs the target over the plan and
  // samples / verifies every entry on the backend.
  void run(const StepPlan& plan, const BlockManager& blocks);

  Verdict verdict(size_t entry) const;
  // The draft tokens of plan entry i (decode entries; rows - 1 of them).
  std::span<const int32_t> drafts(size_t entry) const;
  // The target's raw logits for plan entry i (before penalties), downloaded
  // on request (tests, log-probabilities): every row of a decode entry, or
  // its first `rows` when rows >= 0, the last row of a prefill chunk.
  // [rows, vocab], valid until the next run().
  std::vector<float> logits(size_t entry, int64_t rows = -1) const;

  // Writes drafter context K/V for the first keep[i] rows of each plan entry
  // (rows whose tokens are now committed). No-op without a drafter.
  void write_context(const StepPlan& plan, std::span<const int64_t> keep, const BlockManager& blocks);

  int64_t vocab() const { return vocab_; }
  bool has_drafter() const { return drafter_ != nullptr; }
  model::KVPool& pool() { return *pool_; }

 private:
  model::Qwen3Model& target_;
  model::DFlashDrafter* drafter_;
  int64_t vocab_, target_layers_;
  std::unique_ptr<model::KVPool> pool_;

  // Fills sample_rows_ (one SampleRow per logits row, then the entries'
  // row starts), uploads it and runs Backend::accept; downloads the verdicts.
  void sample(const StepPlan& plan);

  std::vector<int32_t> tokens_, anchors_, drafts_, tap_rows_, sample_rows_, verdicts_;
  ops::OwnedTensor tap_row_ids_, ctx_taps_, sample_inputs_, sampled_, verdicts_dev_, drafts_dev_;
  // Penalties and logit bias of this step.
  PenaltyStep penalties_;
  std::vector<int64_t> logit_begin_, logit_count_, draft_begin_, draft_count_, row_begin_;
};

}  // namespace flashdraft::engine
