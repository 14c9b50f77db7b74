#include "cli/sampling_setup.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "core/error.h"

namespace flashdraft::cli {

void check_sampling_flags(const SamplingFlags& flags) {
  if (flags.max_tokens && *flags.max_tokens < 0) {
    throw UsageError(fmt::format("--max-tokens: must be >= 0, got {}", *flags.max_tokens));
  }
  if (flags.temperature && !(std::isfinite(*flags.temperature) && *flags.temperature >= 0)) {
    throw UsageError(fmt::format("--temperature: must be >= 0 (0 = greedy), got {}", *flags.temperature));
  }
  if (flags.top_p && !(*flags.top_p > 0 && *flags.top_p <= 1)) {
    throw UsageError(fmt::format("--top-p: must be in (0, 1] (1 = off), got {}", *flags.top_p));
  }
  if (flags.top_k && *flags.top_k < 0) {
    throw UsageError(fmt::format("--top-k: must be >= 0 (0 = off), got {}", *flags.top_k));
  }
  if (flags.min_p && !(*flags.min_p >= 0 && *flags.min_p <= 1)) {
    throw UsageError(fmt::format("--min-p: must be in [0, 1] (0 = off), got {}", *flags.min_p));
  }
  for (auto [flag, v] : {std::pair{"--presence-penalty", flags.presence_penalty},
                         std::pair{"--frequency-penalty", flags.frequency_penalty}}) {
    if (v && !(*v >= -2 && *v <= 2)) throw UsageError(fmt::format("{}: must be in [-2, 2] (0 = off), got {}", flag, *v));
  }
  if (flags.repetition_penalty && !(std::isfinite(*flags.repetition_penalty) && *flags.repetition_penalty > 0)) {
    throw UsageError(fmt::format("--repetition-penalty: must be > 0 (1 = off), got {}", *flags.repetition_penalty));
  }
  for (const std::string& s : flags.stop) {
    if (s.empty()) throw UsageError("--stop: a stop string must not be empty");
  }
}

engine::SamplingParams resolve_sampling(const engine::SamplingParams& defaults, const SamplingFlags& flags) {
  check_sampling_flags(flags);
  engine::SamplingParams params = flags.applied_to(defaults);
  if (flags.max_tokens) params.max_tokens = *flags.max_tokens;
  params.seed = flags.seed;
  params.stop = flags.stop;
  params.ignore_eos = flags.ignore_eos;
  try {
    engine::validate(params);
  } catch (const Error& e) {
    // Flags were checked above, so the bad value came from the model directory.
    throw Error(fmt::format("generation_config.json: {}", e.what()));
  }
  return params;
}

}  // namespace flashdraft::cli
