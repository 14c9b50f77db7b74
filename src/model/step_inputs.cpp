#include "model/step_inputs.h"

#include <algorithm>

#include "core/error.h"
#include "model/activation_buffers.h"
#include "model/kv_pool.h"

namespace flashdraft::model {

void StepInputs::build(ops::Backend& backend, const BatchContext& batch, int64_t block_size,
                       std::span<const int32_t> ids, LogitRows which, int64_t min_keys) {
  const auto n_seqs = static_cast<int32_t>(batch.seqs.size());
  const auto rows = static_cast<int32_t>(batch.total_rows());
  if (static_cast<int64_t>(ids.size()) != rows)
    throw Error("step inputs: " + std::to_string(ids.size()) + " token ids for " + std::to_string(rows) + " rows");
  int32_t max_blocks = 1, max_rows = 0, max_keys = 0;
  for (const auto& s : batch.seqs) {
    max_blocks = std::max(max_blocks, static_cast<int32_t>((s.pos0 + s.n_rows + block_size - 1) / block_size));
    max_rows = std::max(max_rows, static_cast<int32_t>(s.n_rows));
    max_keys = std::max(max_keys, static_cast<int32_t>(s.pos0 + s.n_rows));
  }
  if (min_keys > max_keys) {
    max_keys = static_cast<int32_t>(min_keys);
    max_blocks = std::max(max_blocks, static_cast<int32_t>((min_keys + block_size - 1) / block_size));
  }

  // Layout of the one array: ids | q_start | pos0 | block tables | positions | slots | logit rows.
  // Positions and slots are filled a block at a time into an array sized
  // up front: a drafter context write can be thousands of rows.
  host_.clear();
  ids_off_ = 0;
  host_.insert(host_.end(), ids.begin(), ids.end());
  q_start_off_ = host_.size();
  for (const auto& s : batch.seqs) host_.push_back(static_cast<int32_t>(s.row_begin));
  host_.push_back(rows);
  pos0_off_ = host_.size();
  for (const auto& s : batch.seqs) host_.push_back(static_cast<int32_t>(s.pos0));
  tables_off_ = host_.size();
  for (const auto& s : batch.seqs) {
    const auto used = static_cast<size_t>((s.pos0 + s.n_rows + block_size - 1) / block_size);
    host_.insert(host_.end(), s.block_table.begin(), s.block_table.begin() + static_cast<std::ptrdiff_t>(used));
    host_.resize(host_.size() + static_cast<size_t>(max_blocks) - used, 0);
  }
  positions_off_ = host_.size();
  slots_off_ = positions_off_ + static_cast<size_t>(rows);
  host_.resize(slots_off_ + static_cast<size_t>(rows));
  for (const auto& s : batch.seqs) {
    int32_t* position = host_.data() + positions_off_ + s.row_begin;
    int32_t* slot = host_.data() + slots_off_ + s.row_begin;
    for (int64_t p = s.pos0, end = s.pos0 + s.n_rows; p < end;) {
      // The positions p .. run_end - 1 share a block: consecutive slots.
      const int64_t run_end = std::min(end, (p / block_size + 1) * block_size);
      const int64_t first_slot = slot_of(s.block_table, block_size, p);
      for (int64_t q = p; q < run_end; ++q) {
        *position++ = static_cast<int32_t>(q);
        *slot++ = static_cast<int32_t>(first_slot + (q - p));
      }
      p = run_end;
    }
  }
  logit_off_ = host_.size();
  for (const auto& s : batch.seqs) {
    const bool tail = which == LogitRows::BlockTail;
    const int64_t first = tail ? 1 : s.all_logits ? 0 : s.n_rows - 1;
    const int64_t end = tail && s.tail_logits >= 0 ? std::min(s.n_rows, 1 + s.tail_logits) : s.n_rows;
    for (int64_t i = first; i < end; ++i) host_.push_back(static_cast<int32_t>(s.row_begin + i));
  }
  n_logit_rows_ = static_cast<int64_t>(host_.size() - logit_off_);

  const size_t bytes = host_.size() * sizeof(int32_t);
  if (device_.bytes() < bytes) {
    device_ = backend.alloc(std::max(bytes, 2 * device_.bytes()));
    ++buffer_moves();
  }
  backend.upload(device_.view(ops::DType::I32, 1, static_cast<int64_t>(host_.size())), host_.data(), ops::DType::I32);

  const auto* base = static_cast<const int32_t*>(device_.data());
  attn_ = ops::AttnBatch{n_seqs,
                         rows,
                         max_rows,
                         max_keys,
                         max_blocks,
                         static_cast<int32_t>(block_size),
                         base + q_start_off_,
                         base + pos0_off_,
                         base + tables_off_,
                         base + positions_off_,
                         base + slots_off_};
}

void StepInputs::follow(std::span<const SeqFollow> seqs, std::vector<ops::InputFix>& out) const {
  if (static_cast<int32_t>(seqs.size()) != attn_.n_seqs)
    throw Error("step inputs: " + std::to_string(seqs.size()) + " sequences to follow for " +
                std::to_string(attn_.n_seqs));
  auto* base = static_cast<int32_t*>(device_.data());
  for (size_t s = 0; s < seqs.size(); ++s) {
    const SeqFollow& f = seqs[s];
    if (f.verdict < 0) continue;
    const int32_t row = host_[q_start_off_ + s], rows = host_[q_start_off_ + s + 1] - row;
    const int32_t pos0 = host_[pos0_off_ + s];
    auto fix = [&](size_t offset, int32_t kind, int32_t count) {
      ops::InputFix x;
      x.dst = base + offset;
      x.table = base + tables_off_ + s * static_cast<size_t>(attn_.max_blocks);
      x.verdict = f.verdict;
      x.kind = kind;
      x.shift = f.shift;
      x.value = pos0;
      x.count = count;
      x.block_size = attn_.block_size;
      out.push_back(x);
    };
    fix(pos0_off_ + s, ops::InputFix::kShift, 1);
    if (rows == 0) continue;
    fix(positions_off_ + static_cast<size_t>(row), ops::InputFix::kShift, rows);
    fix(slots_off_ + static_cast<size_t>(row), ops::InputFix::kSlot, rows);
    if (f.anchor) fix(ids_off_ + static_cast<size_t>(row), ops::InputFix::kToken, 1);
  }
}

void StepInputs::reserve(ops::Backend& backend, const BatchLimits& limits) {
  // ids, positions, slots, logit rows: one each per row; q_start and pos0 per
  // sequence; the block tables of every sequence at the longest stride.
  const int64_t blocks = (limits.keys + limits.block_size - 1) / limits.block_size + 1;
  const auto words = static_cast<size_t>(4 * limits.rows + 2 * limits.seqs + 1 + limits.seqs * blocks);
  const size_t bytes = words * sizeof(int32_t);
  if (device_.bytes() < bytes) {
    device_ = backend.alloc(bytes);
    ++buffer_moves();
  }
}

ops::Tensor StepInputs::part(size_t offset, int64_t n) const {
  ops::Tensor t = device_.view(ops::DType::I32, 1, 1);
  t.data = static_cast<int32_t*>(device_.data()) + offset;
  t.rows = n;
  t.cols = 1;
  t.ld = 1;
  return t;
}

}  // namespace flashdraft::model
