#include "engine/penalty_step.h"

#include <algorithm>
#include <cstring>

#include "model/activation_buffers.h"
#include "ops/penalty_math.h"

namespace flashdraft::engine {
namespace {

bool decides_with_penalties(const ScheduledRequest& e) {
  return (e.kind == ScheduledRequest::Kind::Decode || e.last_chunk) && e.request->params.needs_penalties();
}

}  // namespace

bool PenaltyStep::needed(const StepPlan& plan) {
  return std::any_of(plan.entries.begin(), plan.entries.end(), decides_with_penalties);
}

void PenaltyStep::update_histories(const StepPlan& plan) {
  for (const ScheduledRequest& e : plan.entries) {
    if (!decides_with_penalties(e)) continue;
    Request& r = *e.request;
    r.penalty_history.update(r.prompt, r.output, r.params);
  }
}

void PenaltyStep::prepare(ops::Backend& be, const StepPlan& plan, std::span<const int64_t> logit_begin,
                          std::span<const int64_t> logit_count, std::span<const int64_t> draft_begin,
                          std::span<const int64_t> draft_count) {
  const size_t n = plan.entries.size();
  constexpr int64_t kWords = ops::PenaltyRow::kWords, kItem = ops::penalty_math::kItemWords;
  n_rows_ = n == 0 ? 0 : logit_begin[n - 1] + logit_count[n - 1];
  host_.assign(static_cast<size_t>(n_rows_ * kWords), 0);
  raw_begin_.assign(n, -1);
  raw_count_.assign(n, 0);
  logit_begin_.assign(logit_begin.begin(), logit_begin.end());
  int64_t raw_rows = 0;
  const size_t items_at = host_.size();
  for (size_t i = 0; i < n; ++i) {
    const ScheduledRequest& e = plan.entries[i];
    Request& r = *e.request;
    if (r.params.logprobs) {
      raw_begin_[i] = raw_rows;
      raw_count_[i] = logit_count[i];
      raw_rows += logit_count[i];
    }
    ops::PenaltyRow p;  // a no-op row unless the entry decides a token with penalties
    const bool on = decides_with_penalties(e);
    if (on) {
      p.repetition = static_cast<float>(r.params.repetition_penalty);
      p.frequency = static_cast<float>(r.params.frequency_penalty);
      p.presence = static_cast<float>(r.params.presence_penalty);
      p.items_begin = static_cast<int32_t>((host_.size() - items_at) / kItem);
      r.penalty_history.append_items(host_);
      p.items_count = static_cast<int32_t>((host_.size() - items_at) / kItem) - p.items_begin;
      p.drafts_begin = static_cast<int32_t>(draft_begin[i]);
    }
    for (int64_t j = 0; j < logit_count[i]; ++j) {
      // Row j decides the token after drafts d_1..d_j: they are its output too.
      p.drafts_count = on ? static_cast<int32_t>(std::min(j, draft_count[i])) : 0;
      std::memcpy(host_.data() + (logit_begin[i] + j) * kWords, &p, sizeof p);
    }
  }
  n_items_ = static_cast<int64_t>(host_.size() - items_at) / kItem;
  const ops::Tensor all = model::grow_tensor(be, words_, ops::DType::I32, static_cast<int64_t>(host_.size()), 1);
  be.upload(all, host_.data(), ops::DType::I32);
  active_ = true;
}

void PenaltyStep::enqueue(ops::Backend& be, const ops::Tensor& logits, const ops::Tensor& drafts) {
  constexpr int64_t kWords = ops::PenaltyRow::kWords, kItem = ops::penalty_math::kItemWords;
  int64_t raw_rows = 0;
  for (int64_t c : raw_count_) raw_rows += c;
  raw_views_.assign(raw_begin_.size(), ops::Tensor{});
  if (raw_rows > 0) {
    const ops::Tensor raw = model::grow_tensor(be, raw_logits_, ops::DType::F32, raw_rows, logits.cols);
    for (size_t i = 0; i < raw_begin_.size(); ++i) {
      if (raw_begin_[i] < 0) continue;
      raw_views_[i] = raw.row_slice(raw_begin_[i], raw_count_[i]);
      be.copy(logits.row_slice(logit_begin_[i], raw_count_[i]), raw_views_[i]);
    }
  }
  const ops::Tensor all = words_.buffer.view(ops::DType::I32, static_cast<int64_t>(host_.size()), 1);
  const ops::Tensor rows = all.row_slice(0, n_rows_ * kWords).reshape(n_rows_, kWords);
  const ops::Tensor items = all.row_slice(n_rows_ * kWords, n_items_ * kItem).reshape(n_items_, kItem);
  be.penalize(logits.row_slice(0, n_rows_), rows, items, drafts);
}

const ops::Tensor* PenaltyStep::raw(size_t entry) const {
  if (!active_ || entry >= raw_views_.size() || raw_views_[entry].empty()) return nullptr;
  return &raw_views_[entry];
}

}  // namespace flashdraft::engine
