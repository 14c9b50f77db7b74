#include "engine/model_runner.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "engine/sampler.h"
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
  target_.forward_batch(tokens_, ctx, *pool_, logits_);
}

std::span<const float> ModelRunner::logits(size_t entry) const {
  const auto v = static_cast<size_t>(vocab_);
  return std::span<const float>(logits_).subspan(static_cast<size_t>(logit_begin_[entry]) * v,
                                                 static_cast<size_t>(logit_count_[entry]) * v);
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
