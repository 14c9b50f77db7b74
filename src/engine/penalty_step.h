#pragma once
// The model runner's share of penalties and logit bias for one step: which
// rows get what (one ops::PenaltyRow per logits row, each entry's items from
// its request's PenaltyHistory), uploaded once, then Backend::penalize on the
// step's logits between the target forward and acceptance. A step in which
// no entry that decides a token asks for penalties does none of this.
//
// Log-probabilities are of the raw logits (vLLM's default), so the rows of
// entries that also ask for them are copied aside before penalize runs.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/scheduler.h"
#include "ops/backend.h"

namespace flashdraft::engine {

class PenaltyStep {
 public:
  // Whether some entry of the plan that decides a token (a decode entry, or
  // the chunk that ends a prefill) has penalties or a logit bias.
  static bool needed(const StepPlan& plan);
  // Brings the PenaltyHistory of every such entry's request up to its
  // output; before prepare, once per step, on one thread: the ranks of a
  // tensor-parallel runner then prepare the same step at once, reading
  // the histories they share.
  static void update_histories(const StepPlan& plan);

  // Builds and uploads the step's rows and items; the runner lays out the
  // step: plan entry i owns logits rows [logit_begin[i], + logit_count[i])
  // and drafts [draft_begin[i], + draft_count[i]) of the step's draft tokens.
  // Afterwards active() until reset().
  void prepare(ops::Backend& be, const StepPlan& plan, std::span<const int64_t> logit_begin,
               std::span<const int64_t> logit_count, std::span<const int64_t> draft_begin,
               std::span<const int64_t> draft_count);
  void reset() { active_ = false; raw_begin_.clear(); }
  bool active() const { return active_; }

  // Enqueues the raw copies, then Backend::penalize over logits (every row of
  // the step). drafts: the step's draft tokens in backend memory (may be empty).
  void enqueue(ops::Backend& be, const ops::Tensor& logits, const ops::Tensor& drafts);

  // The rows of plan entry i kept raw by this step, or nullptr when its raw
  // logits are still the logits tensor's.
  const ops::Tensor* raw(size_t entry) const;

 private:
  bool active_ = false;
  int64_t n_rows_ = 0, n_items_ = 0;
  std::vector<int32_t> host_;
  ops::OwnedTensor words_, raw_logits_;
  std::vector<int64_t> raw_begin_, raw_count_, logit_begin_;
  std::vector<ops::Tensor> raw_views_;
};

}  // namespace flashdraft::engine
