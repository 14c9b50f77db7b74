#include "engine/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool contains(std::span<const int32_t> ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

}  // namespace

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEos:
      return "eos";
    case StopReason::kStopString:
      return "stop_string";
    case StopReason::kMaxTokens:
      return "max_tokens";
    case StopReason::kContextFull:
      return "context_full";
  }
  return "unknown";
}

double GenerationResult::prefill_tokens_per_second() const {
  return prefill_seconds > 0 ? static_cast<double>(prompt_tokens) / prefill_seconds : 0.0;
}

double GenerationResult::decode_tokens_per_second() const {
  // The first token came out of prefill; decode produced the others.
  int64_t decoded = static_cast<int64_t>(tokens.size()) - 1;
  return decoded > 0 && decode_seconds > 0 ? static_cast<double>(decoded) / decode_seconds : 0.0;
}

GenerationResult generate(NextTokenLogits& model, std::span<const int32_t> prompt, const SamplingParams& params,
                          std::span<const int32_t> eos_token_ids, const TokenSink& on_token) {
  if (prompt.empty()) throw Error("the prompt has no tokens; the model needs at least one to continue from");
  const int64_t limit = model.context_limit();
  if (static_cast<int64_t>(prompt.size()) >= limit) {
    throw Error(
        fmt::format("the prompt has {} tokens but the model's context holds {} (max_position_embeddings); "
                    "no room left to generate",
                    prompt.size(), limit));
  }
  GenerationResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  const int64_t max_tokens = params.max_tokens;
  if (max_tokens <= 0) return result;

  Sampler sampler(params);
  Clock::time_point start = Clock::now(), decode_start = start;
  std::span<const float> logits = model.append(prompt);
  int64_t context = result.prompt_tokens;
  for (;;) {
    int32_t token = sampler.sample(logits);
    result.tokens.push_back(token);
    if (result.tokens.size() == 1) {
      result.prefill_seconds = seconds_since(start);
      decode_start = Clock::now();
    }
    if ((!params.ignore_eos && contains(eos_token_ids, token)) || contains(params.stop_token_ids, token)) {
      result.stop_reason = StopReason::kEos;
      break;
    }
    if (!on_token(token)) {
      result.stop_reason = StopReason::kStopString;
      break;
    }
    if (static_cast<int64_t>(result.tokens.size()) >= max_tokens) {
      result.stop_reason = StopReason::kMaxTokens;
      break;
    }
    // Prompt plus generated tokens may fill the context, but not overflow it.
    if (context + 1 >= limit) {
      result.stop_reason = StopReason::kContextFull;
      break;
    }
    logits = model.append(std::span<const int32_t>(&token, 1));
    ++context;
  }
  if (result.tokens.size() > 1) result.decode_seconds = seconds_since(decode_start);
  return result;
}

}  // namespace flashdraft::engine
