#include "engine/generation_result.h"

namespace flashdraft::engine {

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

}  // namespace flashdraft::engine
