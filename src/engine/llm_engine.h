#pragma once
// The serving loop: requests in, tokens out, one scheduled step at a time.
// Plain decoding and DFlash share every line of it; without a drafter a
// decode step is one row and "acceptance" samples that row.
//
// One step = scheduler plan -> ModelRunner (one batched drafter pass, one
// batched target forward, then on the backend: the first token of a
// completed prefill sampled, or the drafts verified, greedy or by lossless
// sampling, each request with its own seed) ->
// stops applied token by token (EOS, stop tokens, the caller's sink for stop
// strings, max_tokens, the context length), so a stop inside an accepted run
// truncates exactly there -> drafter context written for the committed rows
// -> finished requests release their KV blocks.
//
// Draft lengths (with a drafter): each step the scheduler places the decoding
// requests and the engine chooses each one's draft length, 0 ..
// num_speculative_tokens (draft_length_policy.h), from a step cost model
// (step_cost_model.h: calibrated at construction by a few dummy steps,
// cost_calibration.h, then fitted to every step's measured time) and each
// request's acceptance estimate (acceptance_estimate.h, fed by every verify).
// Where the backend replays recorded decode steps, one length for all the
// step's adaptive requests (a mixed step would run eagerly). A step in which
// nobody drafts costs about what a plain step costs: its rows' drafter
// context (prompt chunks included) is written later, batched, before anyone
// drafts again, and never for a request that finishes first (ModelRunner::
// write_context), so any request can draft again any later step.
// Fixed-length requests (adaptive off for the engine or the request) always
// draft num_speculative_tokens.
//
// Overlapped scheduling (EngineConfig::overlap_scheduling): one step stays
// in flight between step() calls, and the next is launched before its
// results are read wherever the next is just its decoding requests again
// (plan_follower); the runner has the backend fix its positions from the
// results (ModelRunner::launch). Requests that stop meanwhile were run once
// more for nothing: their blocks are freed, and their records let go, once
// that step is read.
//
// A finished request's record stays until take_result() hands it over, so a
// long-running loop that takes every result keeps no per-request state.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "engine/acceptance_estimate.h"
#include "engine/block_manager.h"
#include "engine/cost_calibration.h"
#include "engine/draft_length_policy.h"
#include "engine/generation_result.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/spec_stats.h"
#include "engine/step_cost_model.h"

namespace flashdraft::engine {

struct EngineConfig {
  // Draft tokens per step. -1: the drafter's block_size - 1 (0 without a
  // drafter). At most block_size - 1; > 0 needs a drafter. With adaptive
  // speculation, the most a request drafts.
  int64_t num_speculative_tokens = -1;
  // Choose each request's draft length every step (SamplingParams::
  // adaptive_speculation overrides it per request); false: always
  // num_speculative_tokens.
  bool adaptive_speculation = true;
  // A fixed step cost model instead of the calibrated and refined one, so
  // that the draft lengths do not depend on the clock (tests).
  std::optional<StepCostModel::Coefficients> step_costs;
  int64_t kv_block_size = 16;
  // 0: room for max_running requests that each fill the whole context.
  int64_t num_kv_blocks = 0;
  int64_t max_running = 8;
  int64_t max_tokens_per_step = 512;
  // Longest prompt + output a request may have (vLLM's max_model_len). 0:
  // the target's max_position_embeddings, which is also the most it may be.
  int64_t max_model_len = 0;
  std::vector<int32_t> eos_token_ids;  // ignored by requests with ignore_eos
  // No recorded graphs (vLLM's --enforce-eager): every step launches its ops.
  bool enforce_eager = false;
  // Overlapped scheduling (SGLang's overlap scheduler, vLLM's async
  // scheduling): a step is launched before the results of the one ahead of
  // it are read back (the backend fixes its positions from them), so the
  // backend never waits for the host between steps; step() then returns
  // the results of the step before the one it launched. Output is token
  // for token the same. nullopt: on where the backend has a queue of its
  // own (a GPU), off on the CPU (nothing to overlap there).
  std::optional<bool> overlap_scheduling;
  // Backend memory for the taps of committed rows whose drafter context
  // waits for a step that drafts (RunnerOptions::pending_bytes).
  int64_t pending_context_bytes = int64_t{128} << 20;
  // Scratch memory for writing such rows when their request drafts again
  // (RunnerOptions::catch_up_bytes).
  int64_t catch_up_bytes = int64_t{32} << 20;
};

// What a step produced for one request (at most one per request and step).
struct StepOutput {
  RequestId id = 0;
  std::vector<int32_t> tokens;  // emitted this step (a final EOS included)
  bool finished = false;
  FinishReason reason = FinishReason::Length;  // valid when finished
  StopReason stop = StopReason::kMaxTokens;    // valid when reason is Stop or Length
  std::vector<TokenLogprobs> logprobs = {};  // one per token, when the request asked (SamplingParams::logprobs)
};

// A request's record, kept after it finished until take_result().
struct RequestResult {
  RequestId id = 0;
  std::vector<int32_t> tokens;
  bool finished = false;
  FinishReason reason = FinishReason::Length;  // valid when finished
  StopReason stop = StopReason::kMaxTokens;    // which stop; valid when reason is Stop or Length
  int64_t prompt_tokens = 0;
  // From add() to the first token, and from the first token to the finish.
  double prefill_seconds = 0, decode_seconds = 0;
  SpecStats spec;
  std::vector<int32_t> accepted;  // accepted drafts of each verify step, in order
  std::vector<TokenLogprobs> logprobs;  // one per token, when the request asked
  int64_t preemptions = 0;
};

class Engine {
 public:
  // drafter may be null. Throws flashdraft::Error on a bad config (naming
  // the field), e.g. num_speculative_tokens above the drafter's block_size - 1.
  Engine(model::Qwen3Model& target, model::DFlashDrafter* drafter, const EngineConfig& config);

  // Queues a request. on_token (optional) receives every emitted token that
  // is not an end-of-sequence / stop token, in order; returning false means a
  // stop string is complete and stops the request right after that token
  // (FinishReason::Stop, StopReason::kStopString). Throws flashdraft::Error
  // when the prompt is empty, fills the context, or could not fit in the
  // whole KV pool.
  RequestId add(std::vector<int32_t> prompt, const SamplingParams& params, TokenSink on_token = {});

  // Runs one step; empty when there is no work. Requests finished outside a
  // step (max_tokens 0, aborted) are reported by the next one, those aborted
  // from inside a step by that step. With overlapped scheduling it reads
  // back the step in flight and leaves the next one in flight: the first
  // call may return nothing although there is work (has_work() says).
  std::vector<StepOutput> step();
  bool has_work() const;

  // Finishes a waiting or running request with FinishReason::Abort and frees
  // its KV blocks: at once, or at the end of the step when called from inside
  // one (a token sink) or while a step in flight runs it. False, changing
  // nothing, for an unknown or finished id.
  bool abort(RequestId id);
  // The same with FinishReason::Error: for a caller whose step failed.
  bool fail(RequestId id);

  // Throws flashdraft::Error for an id it does not know (never added, or taken).
  RequestResult result(RequestId id) const;
  // A finished request's record, which the engine then forgets; nullopt (and
  // nothing forgotten) while it runs or for an unknown id.
  std::optional<RequestResult> take_result(RequestId id);
  // Requests the engine still holds a record of (running, or finished and not taken).
  size_t num_requests() const { return requests_.size(); }
  const SpecStats& stats() const { return stats_; }
  int64_t preemptions() const { return scheduler_->preemptions(); }
  int64_t num_speculative_tokens() const { return k_; }
  bool adaptive_speculation() const { return config_.adaptive_speculation; }
  // The step cost model (null without a drafter) and its start-up calibration.
  const StepCostModel* step_costs() const { return costs_.get(); }
  const CalibrationReport& calibration() const { return calibration_; }
  int64_t steps() const { return steps_; }
  int64_t context_limit() const { return context_limit_; }
  int64_t num_kv_blocks() const { return blocks_->num_blocks(); }
  int64_t free_kv_blocks() const { return blocks_->free_blocks(); }
  // The decode-step graphs recorded at construction (see ModelRunner).
  const GraphCaptureReport& graphs() const { return graphs_; }
  // Steps that met a decode graph first (ran it eagerly or recorded it):
  // a context bucket the start-up capture did not cover.
  int64_t recording_steps() const { return recording_steps_; }
  // Steps launched behind the step in flight, before its results were read
  // (overlapped scheduling), of steps() in all.
  int64_t followed_steps() const { return followed_steps_; }
  // The drafter context written so far, calibration included (benchmarks).
  const ContextWrites& context_writes() const { return runner_->context_writes(); }

 private:
  // How many of `candidates` (the next tokens in order) the request keeps,
  // and whether it stops after the last kept one.
  size_t keep_until_stop(Request& r, std::span<const int32_t> candidates, bool* stopped);
  bool finish_outside_step(RequestId id, FinishReason reason);
  // A planned step, from planning until its results are read.
  struct Flight {
    StepPlan plan;
    // Planned, or (launched behind another) when that one's results landed:
    // the start of its measured time.
    std::chrono::steady_clock::time_point started;
  };
  std::optional<Flight> plan_step();
  std::optional<Flight> plan_follower(const StepPlan& ahead);
  // Reads a finished step's results into `out` (next: the step launched
  // behind it, if any).
  void complete(Flight& f, const StepPlan* next, std::vector<StepOutput>& out);
  void report_unreported(std::vector<StepOutput>& out);
  bool in_flight(RequestId id) const;
  void apply_deferred();
  // Sets the rows of the step's decode entries (Scheduler::ChooseRows).
  void choose_draft_rows(std::span<ScheduledRequest> decodes);
  void calibrate_costs();

  model::Qwen3Model& target_;
  EngineConfig config_;
  int64_t k_ = 0, context_limit_ = 0, steps_ = 0;
  // Positions a decode step may write from its anchor: 1 + k_ verify rows,
  // and where it drafts the drafter's whole block (DFlashDrafter::prepare's
  // callers run it whatever the draft length; see ModelRunner::prepare).
  int64_t reach_ = 1;
  std::unique_ptr<BlockManager> blocks_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;
  GraphCaptureReport graphs_;
  int64_t recording_steps_ = 0, followed_steps_ = 0;
  std::map<RequestId, std::unique_ptr<Request>> requests_;
  // Finished outside a step (max_tokens 0, abort): reported by the next step.
  std::vector<RequestId> unreported_;
  // abort()/fail() from inside a step, applied once the step is done with its plan.
  std::vector<std::pair<RequestId, FinishReason>> deferred_;
  bool in_step_ = false;
  bool overlap_ = false;
  std::optional<Flight> flight_;  // launched, results not read yet (overlapped scheduling)
  // Requests that stopped while a step launched behind theirs still ran
  // them: their blocks are freed, and their records (taken meanwhile) let
  // go, once that step is read.
  std::vector<RequestId> free_after_;
  std::vector<std::unique_ptr<Request>> retired_;
  RequestId next_id_ = 0;
  SpecStats stats_;
  std::unique_ptr<StepCostModel> costs_;
  std::unique_ptr<AcceptanceEstimate> acceptance_;
  bool calibrated_ = false;
  CalibrationReport calibration_;
  std::vector<DraftCandidate> candidates_;
};

}  // namespace flashdraft::engine
