#pragma once
// One generation request as the scheduler and the model runner share it.
//
// Token positions: the request's tokens are prompt followed by output (what it
// has emitted). num_computed positions have final KV in the pool (target and
// drafter context alike). While Decoding, every emitted token but the last is
// computed: the last one, the anchor, sits at position num_computed and is the
// first row of the next step.
//
// Preemption (by recomputation) frees the request's blocks and sends it back
// to Waiting with num_computed = 0; its output is kept, so the next prefill
// covers prompt + output and its last row yields the next token, exactly as a
// fresh prompt's would. Nothing already emitted is ever taken back.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/generation_result.h"
#include "engine/penalty_history.h"
#include "engine/token_logprobs.h"
#include "engine/sampling_params.h"
#include "engine/spec_stats.h"

namespace flashdraft::engine {

using RequestId = int64_t;

// In the order a request passes through them (Waiting again after preemption).
enum class RequestState { Waiting, Prefilling, Decoding, Finished };
const char* request_state_name(RequestState state);

// Why a request finished, as the outside world sees it (named as in vLLM /
// the OpenAI API). Which stop it was (EOS or a stop string, max_tokens or the
// context) is StopReason, kept beside it for the CLI's summary.
enum class FinishReason { Stop, Length, Abort, Error };
const char* finish_reason_name(FinishReason reason);  // "stop", "length", "abort", "error"
FinishReason finish_reason_of(StopReason stop);       // kEos, kStopString: Stop; the others: Length

struct Request {
  // Validates params (throws flashdraft::Error) and fixes the seed.
  Request(RequestId id, std::vector<int32_t> prompt, const SamplingParams& params);

  RequestId id;
  std::vector<int32_t> prompt;
  SamplingParams params;
  // params.seed, or one drawn from std::random_device here. Every random draw
  // for this request is a function of it and the position being decided
  // (ops::sample_math::uniform), so its output depends on nothing else.
  uint64_t seed = 0;

  RequestState state = RequestState::Waiting;
  std::vector<int32_t> output;  // emitted tokens (what the user sees), in order
  int64_t num_computed = 0;     // positions whose KV is final (prefill progress, then committed length)
  uint64_t arrival = 0;         // set by Scheduler::add; FCFS order
  // Set when Finished.
  std::optional<FinishReason> finish_reason;
  int64_t preemptions = 0;  // times this request was preempted
  SpecStats spec;           // this request's DFlash counters (drafts, accepted, per position)

  // The engine's bookkeeping, kept here so a request is one record (the
  // scheduler and the runner never read these).
  TokenSink sink;
  StopReason stop = StopReason::kMaxTokens;  // which stop, when finish_reason is Stop or Length
  std::vector<int32_t> accepted;             // accepted drafts of each verify step, in order
  int64_t max_tokens_asked = 0;  // params.max_tokens is capped by the context; this is what the caller asked
  PenaltyHistory penalty_history;  // the runner's, for params.needs_penalties()
  std::vector<TokenLogprobs> logprobs;  // one per output token, when params.logprobs
  std::chrono::steady_clock::time_point added, first_token, finished_at;

  int64_t num_tokens() const { return static_cast<int64_t>(prompt.size() + output.size()); }
  // Token at position pos of prompt + output.
  int32_t token(int64_t pos) const;
  // The last emitted token, not yet run by the target (Decoding only).
  int32_t anchor() const;
  // Positions still to prefill (Waiting / Prefilling): prompt + output not yet computed.
  int64_t prefill_remaining() const { return num_tokens() - num_computed; }

  // The runner reports a finished step through these two; they check the
  // state machine and throw std::logic_error on misuse.
  //
  // A prefill chunk of `rows` positions ran. On the chunk that completes the
  // prefill pass the token sampled from its last row: it is emitted and the
  // request starts Decoding.
  void on_prefill(int64_t rows, std::optional<int32_t> first_token);
  // A decode / verify step ran: `emitted` = accepted drafts then the bonus
  // token (one token with plain decoding), possibly cut short by a stop. The
  // anchor and the accepted drafts become computed; the last emitted token is
  // the new anchor.
  void on_decode(std::span<const int32_t> emitted);
};

}  // namespace flashdraft::engine
