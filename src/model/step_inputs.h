#pragma once
// The flat inputs of one batched forward (token ids, positions, slot mapping,
// query starts, first positions, block tables, the rows whose logits are
// wanted), built once from a BatchContext and sent to the backend in one
// upload. Model code reads them through ops::AttnBatch and tensor views.
#include <cstdint>
#include <span>
#include <vector>

#include "model/batch.h"
#include "ops/backend.h"

namespace flashdraft::model {

// One sequence of a step launched before the step ahead of it has been
// read back (overlapped scheduling): its inputs were built as if that step
// kept all its drafts, and the backend fixes them from that step's verdicts
// (ops::InputFix).
struct SeqFollow {
  int32_t verdict = -1;  // the step ahead's verdict row; -1: nothing to fix (a pad)
  int32_t shift = 0;     // positions move by accepted + shift (<= 0: the host assumed the most)
  bool anchor = false;   // row 0's id becomes that step's token (the new anchor)
};

// Which rows of the step need logits.
enum class LogitRows {
  PerSeq,     // every row of a seq with all_logits, else its last row (the target)
  BlockTail,  // rows 1.. of every seq, up to its tail_logits (the DFlash drafter: row 0 is the anchor)
};

class StepInputs {
 public:
  // ids: batch.total_rows() token ids in row order. The block tables must
  // cover every row's position (checked by the model beforehand).
  // min_keys > 0 sizes the launch grids for key ranges up to min_keys (the
  // attention maxima and the block-table stride no smaller), so batches of
  // one shape launch identically whatever their contexts: a captured graph
  // (Backend::capture) replays with them.
  void build(ops::Backend& backend, const BatchContext& batch, int64_t block_size, std::span<const int32_t> ids,
             LogitRows which, int64_t min_keys = 0);

  // Appends the fixes of the built inputs for `seqs` (one per sequence of
  // the batch, in order): first position, positions, slots, and anchor ids.
  void follow(std::span<const SeqFollow> seqs, std::vector<ops::InputFix>& out) const;

  // Sizes the device array for any batch within `limits`.
  void reserve(ops::Backend& backend, const BatchLimits& limits);

  const ops::AttnBatch& attn() const { return attn_; }
  int64_t rows() const { return attn_.n_rows; }
  ops::Tensor ids() const { return part(ids_off_, rows()); }                  // [rows, 1]
  ops::Tensor logit_rows() const { return part(logit_off_, n_logit_rows_); }  // [n, 1]: row indices
  int64_t num_logit_rows() const { return n_logit_rows_; }

 private:
  ops::Tensor part(size_t offset, int64_t n) const;

  std::vector<int32_t> host_;
  ops::Buffer device_;
  ops::AttnBatch attn_;
  size_t ids_off_ = 0, logit_off_ = 0, q_start_off_ = 0, pos0_off_ = 0, tables_off_ = 0, positions_off_ = 0,
         slots_off_ = 0;
  int64_t n_logit_rows_ = 0;
};

}  // namespace flashdraft::model
