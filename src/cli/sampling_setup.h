#pragma once
// Sampling settings for one `generate` run: the model's generation_config.json
// gives the defaults, command-line flags override them. Also gathers every
// end-of-sequence id the model directory declares.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "io/generation_config.h"
#include "io/model_config.h"

namespace flashdraft::tokenizer {
class Tokenizer;
}

namespace flashdraft::cli {

// SamplingParams' own default, used when generation_config.json sets none.
constexpr int kDefaultMaxTokens = engine::SamplingParams{}.max_tokens;

struct SamplingFlags {
  std::optional<double> temperature, top_p, min_p;
  std::optional<int> top_k, max_tokens;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool ignore_eos = false;
};

// Throws UsageError naming the flag when a flag's value is out of range
// (negative --max-tokens, --temperature < 0, --top-p outside (0, 1], ...).
void check_sampling_flags(const SamplingFlags& flags);

// check_sampling_flags, then the merge; throws flashdraft::Error when
// generation_config.json holds an invalid default.
// max_tokens: the flag, else generation_config's max_new_tokens, else
// kDefaultMaxTokens. do_sample=false in generation_config means greedy.
engine::SamplingParams resolve_sampling(const io::GenerationConfig& defaults, const SamplingFlags& flags);

// The union (first-seen order) of generation_config.json's eos_token_id,
// config.json's eos_token_id and tokenizer_config.json's eos_token: models
// disagree on which file is authoritative, and any of them ending the answer
// is what their authors intend.
std::vector<int32_t> collect_eos_ids(const io::ModelConfig& model, const io::GenerationConfig& generation,
                                     const tokenizer::Tokenizer& tokenizer);

}  // namespace flashdraft::cli
