// ModelRunner under tensor parallelism (model/tensor_parallel.h): rank 0's
// runner owns a runner per other rank and a thread for each
// (parallel::RankThreads). Every public call runs on every rank at once,
// each runner over the same plan and block tables (which stay put during
// the call: the engine's scheduler, block manager and DFlash logic exist
// once, on rank 0's side, and the ranks only read them), so each builds the
// same flat step inputs and runs the same forward on its shards, meeting in
// the collectives. All ranks end with the same verdicts; rank 0's are read.
#include <algorithm>

#include "engine/model_runner.h"

namespace flashdraft::engine {

void ModelRunner::start_ranks() {
  ranks_ = std::make_unique<parallel::RankThreads>(target_.rank_comms());
  peers_.resize(target_.peers().size());
  RunnerOptions peer_options = options_;
  // Each rank's runner is made on its own thread (its buffers on its device).
  ranks_->run([&](int rank) {
    if (rank == 0) return;
    const auto i = static_cast<size_t>(rank - 1);
    model::DFlashDrafter* drafter = drafter_ ? drafter_->peers()[i].get() : nullptr;
    peers_[i] = std::make_unique<ModelRunner>(*target_.peers()[i], drafter, num_blocks_, block_size_, peer_options);
  });
}

void ModelRunner::on_every_rank(const std::function<void(ModelRunner&)>& fn) {
  struct Dispatching {
    bool& flag;
    explicit Dispatching(bool& f) : flag(f) { flag = true; }
    ~Dispatching() { flag = false; }
  } dispatching{dispatching_};
  ranks_->run([&](int rank) { fn(rank == 0 ? *this : *peers_[static_cast<size_t>(rank - 1)]); });
}

bool ModelRunner::needs_all_logits(const StepPlan& plan) const {
  // Greedy rows need only each shard's argmax; anything that reads the rest
  // of the row (sampling filters, log-probabilities) gets it gathered.
  return std::any_of(plan.entries.begin(), plan.entries.end(), [](const ScheduledRequest& e) {
    return e.request->params.temperature > 0 || e.request->params.logprobs.has_value();
  });
}

void ModelRunner::verdicts_from_tokens(size_t n) {
  // Backend::accept's greedy rule on the gathered argmax of every row: the
  // longest prefix of drafts equal to the row before's token, then the token
  // of the first row that differs (or the last row).
  std::vector<int32_t> tokens(static_cast<size_t>(n_logit_rows_));
  if (!tokens.empty())
    target_.backend().download_i32(sampled_.buffer.view(ops::DType::I32, n_logit_rows_, 1), tokens.data());
  done_.verdicts.assign(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto token = [&](int64_t j) { return tokens[static_cast<size_t>(done_.logit_begin[i] + j)]; };
    int64_t a = 0;
    while (a < done_.logit_count[i] - 1 && a < done_.draft_count[i] &&
           token(a) == done_.drafts[static_cast<size_t>(done_.draft_begin[i] + a)])
      ++a;
    done_.verdicts[2 * i] = static_cast<int32_t>(a);
    done_.verdicts[2 * i + 1] = token(a);
  }
}

}  // namespace flashdraft::engine
