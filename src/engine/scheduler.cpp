#include "engine/scheduler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace flashdraft::engine {

Scheduler::Scheduler(const SchedulerConfig& config, BlockManager& blocks) : config_(config), blocks_(blocks) {
  if (config.max_running < 1) {
    throw Error("scheduler: max_running " + std::to_string(config.max_running) + " (expected at least 1)");
  }
  if (config.spec_rows < 1) {
    throw Error("scheduler: " + std::to_string(config.spec_rows) +
                " rows per decode step (expected 1 + num_speculative_tokens >= 1)");
  }
  if (config.reach_rows != 0 && config.reach_rows < config.spec_rows) {
    throw Error("scheduler: a decode step reaches " + std::to_string(config.reach_rows) + " positions, fewer than its " +
                std::to_string(config.spec_rows) + " rows");
  }
  if (config.max_tokens_per_step < config.spec_rows) {
    throw Error("scheduler: max_tokens_per_step " + std::to_string(config.max_tokens_per_step) +
                " cannot hold one decode step of " + std::to_string(config.spec_rows) +
                " rows (1 + num_speculative_tokens)");
  }
}

int64_t Scheduler::max_positions(const Request& request) const {
  // The last decode step starts with max_tokens - 1 tokens emitted (one more
  // and the request is done): its anchor sits at prompt + max_tokens - 2 and
  // it writes reach() positions from there. Prefills (also after
  // preemption) need at most prompt + max_tokens - 1 positions, which is no more.
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  const int64_t max_tokens = std::max<int64_t>(request.params.max_tokens, 1);
  return std::max(prompt + max_tokens - 2 + reach(), prompt + max_tokens - 1);
}

void Scheduler::add(Request& request) {
  if (request.state != RequestState::Waiting || request.num_computed != 0) {
    throw std::logic_error("scheduler: request " + std::to_string(request.id) + " added while " +
                           request_state_name(request.state));
  }
  if (request.prompt.empty()) {
    throw Error("request " + std::to_string(request.id) + ": empty prompt (expected at least one token)");
  }
  if (request.params.max_tokens < 1) {
    throw Error("request " + std::to_string(request.id) + ": max_tokens " + std::to_string(request.params.max_tokens) +
                " (expected at least 1)");
  }
  const int64_t need = blocks_.blocks_for(max_positions(request));
  if (need > blocks_.num_blocks()) {
    throw Error("request " + std::to_string(request.id) + ": prompt of " + std::to_string(request.prompt.size()) +
                " tokens + max_tokens " + std::to_string(request.params.max_tokens) + " needs " + std::to_string(need) +
                " KV blocks of " + std::to_string(blocks_.block_size()) + " tokens, but the whole KV cache has " +
                std::to_string(blocks_.num_blocks()) + " (shorten the prompt, lower max_tokens or enlarge the cache)");
  }
  request.arrival = next_arrival_++;
  waiting_.push_back(&request);
}

Request* Scheduler::preempt_youngest() {
  Request* victim = running_.back();
  running_.pop_back();
  blocks_.free(victim->id);
  victim->state = RequestState::Waiting;
  victim->num_computed = 0;
  ++victim->preemptions;
  ++preemptions_;
  waiting_.push_front(victim);
  return victim;
}

StepPlan Scheduler::schedule(const ChooseRows& choose_rows) {
  StepPlan plan;
  int64_t budget = config_.max_tokens_per_step;
  auto scheduled = [&](const Request* r) {
    return std::any_of(plan.entries.begin(), plan.entries.end(), [r](const auto& e) { return e.request == r; });
  };

  // Decoding requests, oldest first. Preemption takes running_.back(), which
  // is never one planned already: those are older than the one being placed.
  for (size_t i = 0; i < running_.size() && budget >= config_.spec_rows; ++i) {
    Request* r = running_[i];
    if (r->state != RequestState::Decoding) continue;
    bool fits = blocks_.ensure(r->id, r->num_computed + reach());
    while (!fits && running_.back() != r) {
      if (scheduled(running_.back())) throw std::logic_error("scheduler: would preempt a planned request");
      plan.preempted.push_back(preempt_youngest());
      fits = blocks_.ensure(r->id, r->num_computed + reach());
    }
    if (!fits) {  // r is now the youngest running request: it yields its own blocks
      plan.preempted.push_back(preempt_youngest());
      break;  // everything after it is gone too
    }
    plan.entries.push_back({r, ScheduledRequest::Kind::Decode, r->num_computed, config_.spec_rows, false});
    budget -= config_.spec_rows;
  }
  if (choose_rows && !plan.entries.empty()) {
    choose_rows(plan.entries);
    for (ScheduledRequest& e : plan.entries) {
      if (e.rows < 1 || e.rows > config_.spec_rows) {
        throw std::logic_error("scheduler: a decode entry given " + std::to_string(e.rows) + " rows (expected 1 .. " +
                               std::to_string(config_.spec_rows) + ")");
      }
      budget += config_.spec_rows - e.rows;
    }
  }

  // Prefills already under way (their blocks were taken at admission).
  for (Request* r : running_) {
    if (budget == 0) break;
    if (r->state != RequestState::Prefilling) continue;
    const int64_t rows = std::min(budget, r->prefill_remaining());
    plan.entries.push_back({r, ScheduledRequest::Kind::Prefill, r->num_computed, rows, rows == r->prefill_remaining()});
    budget -= rows;
  }

  // Admission, strictly in arrival order: a head that does not fit blocks
  // everyone behind it, or younger requests could starve it. Not in a step
  // that preempted: memory is short, and the victim would be re-admitted at
  // once only to recompute what it just gave up.
  while (plan.preempted.empty() && budget > 0 && !waiting_.empty() &&
         static_cast<int64_t>(running_.size()) < config_.max_running) {
    Request* r = waiting_.front();
    if (!blocks_.ensure(r->id, r->num_tokens())) break;
    waiting_.pop_front();
    r->state = RequestState::Prefilling;
    running_.push_back(r);
    const int64_t rows = std::min(budget, r->prefill_remaining());
    plan.entries.push_back({r, ScheduledRequest::Kind::Prefill, 0, rows, rows == r->prefill_remaining()});
    budget -= rows;
  }

  plan.total_rows = config_.max_tokens_per_step - budget;
  if (plan.entries.empty() && has_work()) {
    throw std::logic_error("scheduler: no request could be planned although " + std::to_string(waiting_.size()) +
                           " wait and " + std::to_string(running_.size()) + " run");
  }
  return plan;
}

void Scheduler::finish(Request& request, FinishReason reason, bool free_blocks) {
  if (request.state == RequestState::Finished) {
    throw std::logic_error("scheduler: request " + std::to_string(request.id) + " finished twice");
  }
  if (free_blocks) blocks_.free(request.id);
  auto r = std::find(running_.begin(), running_.end(), &request);
  if (r != running_.end()) {
    running_.erase(r);
  } else {
    auto w = std::find(waiting_.begin(), waiting_.end(), &request);
    if (w == waiting_.end()) {
      throw std::logic_error("scheduler: request " + std::to_string(request.id) + " finished but never added");
    }
    waiting_.erase(w);
  }
  request.state = RequestState::Finished;
  request.finish_reason = reason;
}

}  // namespace flashdraft::engine
