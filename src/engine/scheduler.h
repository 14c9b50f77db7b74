#pragma once
// Continuous batching: each step decides which requests run and how many
// token rows each gets.
//
// Order within a step: running Decoding requests (oldest first, up to
// spec_rows rows each: the caller's choose_rows picks each one's rows), then running Prefilling requests continue their prompt, then Waiting
// requests are admitted strictly first-come first-served while the row budget,
// max_running and free blocks allow. A prompt longer than what is left of the
// row budget is split into chunks over several steps.
//
// Capacity: a request is admitted only when blocks for its whole prefill are
// free (taken at once, so its later chunks never wait for memory); a decoding
// request grows its table by the positions of each step, reserved for its
// reach (SchedulerConfig::reach_rows) whatever rows it was given (so a longer draft next step never needs a
// preemption this step's plan did not make). When a running request
// cannot grow, the most recently admitted running request is preempted (blocks
// freed, back to the FRONT of the waiting queue, it recomputes prompt + output
// later) until it can, possibly the request itself. Admission never preempts,
// and a step that preempted admits nobody.
//
// Invariant that keeps this fair and free of livelock: running requests are
// in arrival order and all arrived before any waiting one. So the oldest
// request is preempted only when it is alone, which add() rules out by
// rejecting any request that could not run alone in the whole pool.
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "engine/block_manager.h"
#include "engine/request.h"

namespace flashdraft::engine {

struct SchedulerConfig {
  int64_t max_running = 8;            // requests Prefilling or Decoding at once
  int64_t max_tokens_per_step = 512;  // row budget of one batched forward
  int64_t spec_rows = 1;              // most rows of a decode step: 1 + num_speculative_tokens
  // Positions a decode step may write from its anchor, reserved before it
  // is planned: the drafter's whole block where it drafts (longer than
  // spec_rows when num_speculative_tokens < block_size - 1). 0: spec_rows.
  int64_t reach_rows = 0;
};

struct ScheduledRequest {
  enum class Kind { Prefill, Decode };
  Request* request = nullptr;
  Kind kind = Kind::Prefill;
  int64_t pos0 = 0;  // first position of the rows (= request->num_computed)
  int64_t rows = 0;  // prefill: chunk length; decode: 1 + drafts (anchor + drafts), at most spec_rows
  // Prefill: this chunk completes the prefill, so its last row's logits give
  // the request's next token.
  bool last_chunk = false;
};

struct StepPlan {
  std::vector<ScheduledRequest> entries;  // decodes first, then prefills; row order of the batch
  std::vector<Request*> preempted;        // preempted while planning this step (now Waiting)
  int64_t total_rows = 0;
  bool empty() const { return entries.empty(); }
};

class Scheduler {
 public:
  // Throws flashdraft::Error on max_running < 1, spec_rows < 1, a reach
  // shorter than spec_rows or a row budget smaller than spec_rows.
  Scheduler(const SchedulerConfig& config, BlockManager& blocks);

  // Queues a Waiting request (not owned; it must outlive its time here).
  // Throws flashdraft::Error, naming the request, when its prompt is empty or
  // prompt + max_tokens could not fit even in the whole KV pool.
  void add(Request& request);

  // Sets the rows (1 .. spec_rows) of the step's decode entries, which come
  // with spec_rows; called once the decode entries are placed, before the
  // prefills get what is left of the row budget.
  using ChooseRows = std::function<void(std::span<ScheduledRequest> decodes)>;

  // Plans the next step. Block tables of the planned requests cover every
  // planned row. Empty only when there is no work. Without choose_rows every
  // decode entry has spec_rows rows.
  StepPlan schedule(const ChooseRows& choose_rows = {});

  // The runner is done with a request (stop, length, abort): frees its
  // blocks (unless free_blocks is false: a step in flight still writes them,
  // and the caller frees them after it), removes it from the queues and
  // marks it Finished.
  void finish(Request& request, FinishReason reason, bool free_blocks = true);

  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  const std::deque<Request*>& waiting() const { return waiting_; }
  const std::vector<Request*>& running() const { return running_; }  // in admission order
  int64_t preemptions() const { return preemptions_; }
  const SchedulerConfig& config() const { return config_; }
  const BlockManager& blocks() const { return blocks_; }

  // Most positions a request may ever need at once (its last decode step).
  int64_t max_positions(const Request& request) const;
  // Positions a decode step may write from its anchor.
  int64_t reach() const { return config_.reach_rows > 0 ? config_.reach_rows : config_.spec_rows; }

 private:
  // Frees running_.back() and puts it at the front of the waiting queue.
  Request* preempt_youngest();

  SchedulerConfig config_;
  BlockManager& blocks_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;
  uint64_t next_arrival_ = 0;
  int64_t preemptions_ = 0;
};

}  // namespace flashdraft::engine
