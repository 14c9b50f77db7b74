#pragma once
// The serving loop: requests in, tokens out, one scheduled step at a time.
// Plain decoding and DFlash share every line of it; without a drafter a
// decode step is one row and "acceptance" samples that row.
//
// One step = scheduler plan -> ModelRunner (one batched drafter pass, one
// batched target forward) -> per request: sample the first token of a
// completed prefill, or verify the drafts (greedy or lossless sampling) ->
// stops applied token by token (EOS, stop tokens, the caller's sink for stop
// strings, max_tokens, the context length), so a stop inside an accepted run
// truncates exactly there -> drafter context written for the committed rows
// -> finished requests release their KV blocks.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "engine/block_manager.h"
#include "engine/generation_result.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/spec_stats.h"

namespace flashdraft::engine {

struct EngineConfig {
  // Draft tokens per step. -1: the drafter's block_size - 1 (0 without a
  // drafter). At most block_size - 1; > 0 needs a drafter.
  int64_t num_speculative_tokens = -1;
  int64_t kv_block_size = 16;
  // 0: room for max_running requests that each fill the whole context.
  int64_t num_kv_blocks = 0;
  int64_t max_running = 8;
  int64_t max_tokens_per_step = 512;
  std::vector<int32_t> eos_token_ids;  // ignored by requests with ignore_eos
};

// What a step produced for one request.
struct StepOutput {
  RequestId id = 0;
  std::vector<int32_t> tokens;  // emitted this step (a final EOS included)
  bool finished = false;
  StopReason reason = StopReason::kMaxTokens;  // valid when finished
};

// A request's record, kept after it finished.
struct RequestResult {
  std::vector<int32_t> tokens;
  StopReason reason = StopReason::kMaxTokens;
  bool finished = false;
  int64_t prompt_tokens = 0;
  // From add() to the first token, and from the first token to the finish.
  double prefill_seconds = 0, decode_seconds = 0;
  SpecStats spec;
  std::vector<int32_t> accepted;  // accepted drafts of each verify step, in order
  int64_t preemptions = 0;
};

class Engine {
 public:
  // drafter may be null. Throws flashdraft::Error on a bad config (naming
  // the field), e.g. num_speculative_tokens above the drafter's block_size - 1.
  Engine(model::Qwen3Model& target, model::DFlashDrafter* drafter, const EngineConfig& config);

  // Queues a request. on_token (optional) receives every emitted token that
  // is not an end-of-sequence / stop token, in order; returning false stops
  // the request right after that token (StopReason::kStopString). Throws
  // flashdraft::Error when the prompt is empty, fills the context, or could
  // not fit in the whole KV pool.
  RequestId add(std::vector<int32_t> prompt, const SamplingParams& params, TokenSink on_token = {});

  // Runs one step; empty when there is no work.
  std::vector<StepOutput> step();
  bool has_work() const;

  RequestResult result(RequestId id) const;
  const SpecStats& stats() const { return stats_; }
  int64_t preemptions() const { return scheduler_->preemptions(); }
  int64_t num_speculative_tokens() const { return k_; }
  int64_t steps() const { return steps_; }
  int64_t context_limit() const { return context_limit_; }
  int64_t num_kv_blocks() const { return blocks_->num_blocks(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Tracked {
    std::unique_ptr<Request> request;
    TokenSink sink;
    StopReason reason = StopReason::kMaxTokens;
    std::vector<int32_t> accepted;
    int64_t max_tokens = 0;  // as asked (the request's own is capped by the context)
    Clock::time_point added, first_token, finished;
  };
  // How many of `candidates` (the next tokens in order) the request keeps,
  // and whether it stops after the last kept one.
  size_t keep_until_stop(Tracked& t, std::span<const int32_t> candidates, bool* stopped);
  void finish(Tracked& t, std::vector<StepOutput>& out, size_t out_index);

  model::Qwen3Model& target_;
  EngineConfig config_;
  int64_t k_ = 0, context_limit_ = 0, steps_ = 0;
  std::unique_ptr<BlockManager> blocks_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;
  std::map<RequestId, Tracked> requests_;
  std::vector<RequestId> finished_at_add_;  // max_tokens 0: reported by the next step
  RequestId next_id_ = 0;
  SpecStats stats_;
};

}  // namespace flashdraft::engine
