#pragma once
// What one finished generation reports: why it stopped, and the token counts
// and times behind the speeds in the CLI's summary line.
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace flashdraft::engine {

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
// false when a stop string is complete, which stops the request right after
// that token (StopReason::kStopString). Aborting is Engine::abort, not this.
using TokenSink = std::function<bool(int32_t token)>;

}  // namespace flashdraft::engine
