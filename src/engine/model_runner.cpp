#include "engine/model_runner.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "model/activation_buffers.h"

namespace flashdraft::engine {
namespace {

std::vector<model::KVLayerShape> pool_layers(const model::Qwen3Model& target, const model::DFlashDrafter* drafter) {
  std::vector<model::KVLayerShape> layers = target.kv_layers();
  if (drafter) {
    const auto d = drafter->kv_layers();
    layers.insert(layers.end(), d.begin(), d.end());
  }
  return layers;
}

}  // namespace

ModelRunner::ModelRunner(model::Qwen3Model& target, model::DFlashDrafter* drafter, int64_t num_blocks,
                         int64_t block_size)
    : target_(target),
      drafter_(drafter),
      vocab_(target.config().vocab_size),
      target_layers_(static_cast<int64_t>(target.kv_layers().size())),
      pool_(std::make_unique<model::KVPool>(target.backend(), num_blocks, block_size, pool_layers(target, drafter))) {
  // Taps cost a copy per tapped layer and row: only when someone reads them.
  target_.set_tap_layers(drafter ? drafter->config().target_layer_ids : std::vector<int64_t>{});
}

void ModelRunner::run(const StepPlan& plan, const BlockManager& blocks) {
  const size_t n = plan.entries.size();
  logit_begin_.assign(n, 0);
  logit_count_.assign(n, 0);
  draft_begin_.assign(n, 0);
  draft_count_.assign(n, 0);
  row_begin_.assign(n, 0);

  // 1. Draft for every decode entry with room for drafts, in one drafter pass.
  drafts_.clear();
  if (drafter_) {
    model::BatchContext blocks_ctx;
    anchors_.clear();
    int64_t row = 0;
    for (size_t i = 0; i < n; ++i) {
      const ScheduledRequest& e = plan.entries[i];
      if (e.kind != ScheduledRequest::Kind::Decode || e.rows < 2) continue;
      anchors_.push_back(e.request->anchor());
      blocks_ctx.seqs.push_back({row, e.rows, e.pos0, blocks.table(e.request->id), true});
      row += e.rows;
    }
    if (!anchors_.empty()) {
      drafter_->draft_tokens(anchors_, blocks_ctx, *pool_, target_layers_, drafts_);
      int64_t drow = 0;
      for (size_t i = 0; i < n; ++i) {
        const ScheduledRequest& e = plan.entries[i];
        if (e.kind != ScheduledRequest::Kind::Decode || e.rows < 2) continue;
        draft_begin_[i] = drow;
        draft_count_[i] = e.rows - 1;
        drow += e.rows - 1;
      }
    }
  }

  // 2. One target forward over every row of the step.
  model::BatchContext ctx;
  tokens_.clear();
  int64_t logit_row = 0;
  for (size_t i = 0; i < n; ++i) {
    const ScheduledRequest& e = plan.entries[i];
    const Request& r = *e.request;
    const bool decode = e.kind == ScheduledRequest::Kind::Decode;
    row_begin_[i] = static_cast<int64_t>(tokens_.size());
    if (decode) {
      tokens_.push_back(r.anchor());
      const auto d = drafts(i);
      if (static_cast<int64_t>(d.size()) != e.rows - 1) {
        throw Error("model runner: a decode step of " + std::to_string(e.rows) +
                    " rows needs a drafter (num_speculative_tokens > 0 without a draft model)");
      }
      tokens_.insert(tokens_.end(), d.begin(), d.end());
    } else {
      for (int64_t p = e.pos0; p < e.pos0 + e.rows; ++p) tokens_.push_back(r.token(p));
    }
    ctx.seqs.push_back({row_begin_[i], e.rows, e.pos0, blocks.table(r.id), decode});
    logit_begin_[i] = logit_row;
    logit_count_[i] = decode ? e.rows : 1;
    logit_row += logit_count_[i];
  }
  if (tokens_.empty()) return;
  target_.run_batch(tokens_, ctx, *pool_);
  penalties_.reset();
  if (PenaltyStep::needed(plan)) {
    ops::Backend& be = target_.backend();
    penalties_.prepare(be, plan, logit_begin_, logit_count_, draft_begin_, draft_count_);
    const auto d = static_cast<int64_t>(drafts_.size());
    const ops::Tensor drafts = model::grow_tensor(be, drafts_dev_, ops::DType::I32, d, 1);
    if (d > 0) be.upload(drafts, drafts_.data(), ops::DType::I32);
    penalties_.enqueue(be, target_.logits_tensor(), d > 0 ? drafts : ops::Tensor{});
  }
  sample(plan);
}

void ModelRunner::sample(const StepPlan& plan) {
  const size_t n = plan.entries.size();
  const int64_t n_rows = logit_begin_[n - 1] + logit_count_[n - 1];
  const int64_t words = ops::SampleRow::kWords;
  sample_rows_.assign(static_cast<size_t>(n_rows * words) + n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const ScheduledRequest& e = plan.entries[i];
    const Request& r = *e.request;
    ops::SampleRow p;
    // A prefill chunk that does not end the prompt decides nothing: the cheap greedy path.
    const bool decides = e.kind == ScheduledRequest::Kind::Decode || e.last_chunk;
    p.temperature = decides ? static_cast<float>(r.params.temperature) : 0.0f;
    p.top_k = r.params.top_k;
    p.top_p = static_cast<float>(r.params.top_p);
    p.min_p = static_cast<float>(r.params.min_p);
    p.seed_lo = static_cast<uint32_t>(r.seed);
    p.seed_hi = static_cast<uint32_t>(r.seed >> 32);
    const auto d = drafts(i);
    for (int64_t j = 0; j < logit_count_[i]; ++j) {
      // Logits row j of a decode entry follows position pos0 + j; a prefill
      // entry's one row is the chunk's last.
      const int64_t row_pos = e.kind == ScheduledRequest::Kind::Decode ? e.pos0 + j : e.pos0 + e.rows - 1;
      p.position = static_cast<int32_t>(row_pos + 1);
      p.draft = j < static_cast<int64_t>(d.size()) ? d[static_cast<size_t>(j)] : -1;
      std::memcpy(sample_rows_.data() + (logit_begin_[i] + j) * words, &p, sizeof p);
    }
    sample_rows_[static_cast<size_t>(n_rows * words) + i] = static_cast<int32_t>(logit_begin_[i]);
  }
  sample_rows_.back() = static_cast<int32_t>(n_rows);

  ops::Backend& be = target_.backend();
  const ops::Tensor inputs =
      model::grow_tensor(be, sample_inputs_, ops::DType::I32, static_cast<int64_t>(sample_rows_.size()), 1);
  be.upload(inputs, sample_rows_.data(), ops::DType::I32);
  const ops::Tensor rows = inputs.row_slice(0, n_rows * words).reshape(n_rows, words);
  const ops::Tensor seq_start = inputs.row_slice(n_rows * words, static_cast<int64_t>(n) + 1);
  const ops::Tensor sampled = model::grow_tensor(be, sampled_, ops::DType::I32, n_rows, 1);
  const ops::Tensor out = model::grow_tensor(be, verdicts_dev_, ops::DType::I32, static_cast<int64_t>(n), 2);
  be.accept(target_.logits_tensor(), rows, seq_start, sampled, out);
  verdicts_.resize(2 * n);
  be.download_i32(out, verdicts_.data());
}

ModelRunner::Verdict ModelRunner::verdict(size_t entry) const {
  return Verdict{verdicts_[2 * entry], verdicts_[2 * entry + 1]};
}

std::vector<float> ModelRunner::logits(size_t entry, int64_t count) const {
  if (count < 0 || count > logit_count_[entry]) count = logit_count_[entry];
  const ops::Tensor* raw = penalties_.raw(entry);
  const ops::Tensor rows =
      raw ? raw->row_slice(0, count) : target_.logits_tensor().row_slice(logit_begin_[entry], count);
  std::vector<float> out(static_cast<size_t>(rows.numel()));
  target_.backend().download(rows, out.data());
  return out;
}

std::span<const int32_t> ModelRunner::drafts(size_t entry) const {
  return std::span<const int32_t>(drafts_).subspan(static_cast<size_t>(draft_begin_[entry]),
                                                   static_cast<size_t>(draft_count_[entry]));
}

void ModelRunner::write_context(const StepPlan& plan, std::span<const int64_t> keep, const BlockManager& blocks) {
  if (!drafter_) return;
  ops::Backend& be = target_.backend();
  model::BatchContext ctx;
  tap_rows_.clear();
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const ScheduledRequest& e = plan.entries[i];
    if (keep[i] <= 0) continue;
    ctx.seqs.push_back({static_cast<int64_t>(tap_rows_.size()), keep[i], e.pos0, blocks.table(e.request->id), false});
    for (int64_t r = 0; r < keep[i]; ++r) tap_rows_.push_back(static_cast<int32_t>(row_begin_[i] + r));
  }
  if (ctx.seqs.empty()) return;
  // The kept rows' taps, gathered on the backend: they never visit the host.
  const ops::Tensor& taps = target_.taps_tensor();
  const auto m = static_cast<int64_t>(tap_rows_.size());
  const ops::Tensor rows = model::grow_tensor(be, tap_row_ids_, ops::DType::I32, m, 1);
  be.upload(rows, tap_rows_.data(), ops::DType::I32);
  const ops::Tensor kept = model::grow_tensor(be, ctx_taps_, taps.dtype, m, taps.cols);
  be.gather_rows(taps, rows.as<int32_t>(), kept);
  drafter_->write_context(kept, ctx, *pool_, target_layers_);
}

}  // namespace flashdraft::engine
