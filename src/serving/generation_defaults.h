#pragma once
// What a model directory says about generating with it: generation_config.json
// as default SamplingParams, and every end-of-sequence id its files declare.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/sampling_params.h"
#include "io/generation_config.h"
#include "io/model_config.h"

namespace flashdraft::tokenizer {
class Tokenizer;
}

namespace flashdraft::serving {

// temperature, top_k, top_p, min_p, repetition_penalty and max_new_tokens
// (-> max_tokens) are taken when present, as vLLM does; absent fields keep SamplingParams'
// defaults. An explicit do_sample: false means greedy (temperature 0), as in
// transformers; a missing do_sample does not force greedy (Qwen3 and most
// chat models set the values they want sampled with). top_k <= 0 means off.
// EOS ids are NOT copied into stop_token_ids: they go to the engine's EOS
// list, so that ignore_eos can still override them. Not validated: a request's own values may
// still replace a bad default, so callers validate after merging.
engine::SamplingParams sampling_defaults(const io::GenerationConfig& generation);

// Sampling values a user gave (generate's flags, a request's fields), each
// replacing the model's default where present. The CLI and the server read
// them each in their own way and merge them here.
struct SamplingOverrides {
  std::optional<double> temperature, top_p, min_p;
  std::optional<int> top_k;
  std::optional<double> presence_penalty, frequency_penalty, repetition_penalty;

  // `defaults` with the given values in place (not validated).
  engine::SamplingParams applied_to(const engine::SamplingParams& defaults) const;
};

// The union (first-seen order, no repeats) of generation_config.json's
// eos_token_id, config.json's eos_token_id and tokenizer_config.json's
// eos_token: models disagree on which file is authoritative, and any of them
// ending the answer is what their authors intend.
std::vector<int32_t> eos_token_ids(const io::ModelConfig& model, const io::GenerationConfig& generation,
                                   const tokenizer::Tokenizer& tokenizer);

}  // namespace flashdraft::serving
