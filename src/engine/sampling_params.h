#pragma once
// What a request asks of sampling and stopping. Field meanings follow vLLM's
// SamplingParams.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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
  // With a drafter: choose this request's draft length every step (true) or
  // always draft num_speculative_tokens (false); none: the engine's setting
  // (EngineConfig::adaptive_speculation). Not a sampling matter, but it
  // travels with the request as these do.
  std::optional<bool> adaptive_speculation;
  // Applied on the backend before sampling (Backend::penalize), greedy rows
  // included, as in vLLM: presence and frequency over the output tokens
  // (OpenAI's definition), repetition over prompt and output (divides a
  // positive logit, multiplies a negative one), logit_bias added first.
  double presence_penalty = 0.0;    // [-2, 2]; 0 = off
  double frequency_penalty = 0.0;   // [-2, 2]; 0 = off
  double repetition_penalty = 1.0;  // > 0; 1 = off
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> added to its logit, [-100, 100]
  // Log-probabilities of every emitted token (log-softmax of the raw logits
  // of the row that produced it) and of its `logprobs` most likely
  // alternatives; none: not computed. At most kMaxLogprobs.
  std::optional<int> logprobs;
  static constexpr int kMaxLogprobs = 20;

  // Whether Backend::penalize has anything to do for this request.
  bool needs_penalties() const {
    return presence_penalty != 0 || frequency_penalty != 0 || repetition_penalty != 1 || !logit_bias.empty();
  }
};

// Throws flashdraft::Error naming the parameter and its allowed range when
// temperature < 0 (or not finite), top_k < 0, top_p outside (0, 1], min_p
// outside [0, 1], a presence / frequency penalty outside [-2, 2], a
// repetition penalty not > 0 (or not finite), a logit bias outside
// [-100, 100] or a negative token id, or logprobs outside [0, kMaxLogprobs].
void validate(const SamplingParams& params);

}  // namespace flashdraft::engine
