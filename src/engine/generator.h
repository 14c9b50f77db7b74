#pragma once
// The plain one-request generation loop: prefill the prompt, then sample one
// token per step until an end-of-sequence token, max_tokens, the model's
// context limit, or the caller says stop (a stop string matched in the text).
// It deals in token ids only; turning them into text is the caller's job, so
// this loop needs neither a tokenizer nor a particular model.
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/sampler.h"

namespace flashdraft::engine {

// What the loop needs from a model.
class NextTokenLogits {
 public:
  virtual ~NextTokenLogits() = default;
  // Appends tokens to the model's context and returns the logits ([vocab])
  // for the token that follows them. Valid until the next call.
  virtual std::span<const float> append(std::span<const int32_t> tokens) = 0;
  // Most tokens the context can hold (prompt and generated together).
  virtual int64_t context_limit() const = 0;
};

enum class StopReason { kEos, kStopString, kMaxTokens, kContextFull };
std::string_view stop_reason_name(StopReason reason);  // "eos", "stop_string", ...

struct GenerationResult {
  std::vector<int32_t> tokens;  // every sampled id, a final EOS included
  StopReason stop_reason = StopReason::kMaxTokens;
  int64_t prompt_tokens = 0;
  // Prefill runs up to the first sampled token; decode covers the rest.
  double prefill_seconds = 0, decode_seconds = 0;

  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;
};

// Receives each sampled token that is not an end-of-sequence token; returns
// false to stop generating (reported as StopReason::kStopString).
using TokenSink = std::function<bool(int32_t token)>;

// eos_token_ids stop generation unless params.ignore_eos; params.stop_token_ids
// always do. Throws flashdraft::Error when the prompt is empty or leaves no
// room in the context.
GenerationResult generate(NextTokenLogits& model, std::span<const int32_t> prompt, const SamplingParams& params,
                          std::span<const int32_t> eos_token_ids, const TokenSink& on_token);

}  // namespace flashdraft::engine
