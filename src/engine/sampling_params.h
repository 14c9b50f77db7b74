#pragma once
// What a request asks of sampling and stopping. Field meanings follow vLLM's
// SamplingParams.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flashdraft::engine {

struct SamplingParams {
  double temperature = 1.0;  // 0 = greedy
  int top_k = 0;             // 0 = off
  double top_p = 1.0;        // 1 = off
  double min_p = 0.0;        // 0 = off
  std::optional<uint64_t> seed;  // none: a random one, drawn when the request is added
  int max_tokens = 256;
  std::vector<int32_t> stop_token_ids;  // stop even with ignore_eos
  std::vector<std::string> stop;        // stop strings, never emitted
  bool ignore_eos = false;
};

// Throws flashdraft::Error naming the parameter and its allowed range when
// temperature < 0 (or not finite), top_k < 0, top_p outside (0, 1], or min_p
// outside [0, 1].
void validate(const SamplingParams& params);

}  // namespace flashdraft::engine
