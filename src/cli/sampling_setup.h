#pragma once
// Sampling settings for one `generate` run: the model's generation_config.json
// gives the defaults (serving::sampling_defaults), command-line flags override
// them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "serving/generation_defaults.h"

namespace flashdraft::cli {

// SamplingParams' own default, used when generation_config.json sets none.
constexpr int kDefaultMaxTokens = engine::SamplingParams{}.max_tokens;

// temperature, top_p, top_k, min_p and the penalties as given (--temperature, ...).
struct SamplingFlags : serving::SamplingOverrides {
  std::optional<int> max_tokens;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool ignore_eos = false;
};

// Throws UsageError naming the flag when a flag's value is out of range
// (negative --max-tokens, --temperature < 0, --top-p outside (0, 1],
// --presence-penalty outside [-2, 2], --repetition-penalty <= 0, ...).
void check_sampling_flags(const SamplingFlags& flags);

// check_sampling_flags, then the flags given replace the model's defaults
// (max_tokens: the flag, else generation_config's max_new_tokens, else
// kDefaultMaxTokens); throws flashdraft::Error naming generation_config.json
// when a default the flags left in place is invalid.
engine::SamplingParams resolve_sampling(const engine::SamplingParams& defaults, const SamplingFlags& flags);

}  // namespace flashdraft::cli
