#pragma once
// A model's generation_config.json as default SamplingParams.
#include <cstdint>
#include <vector>

#include "engine/sampling_params.h"
#include "io/generation_config.h"
#include "io/model_config.h"

namespace flashdraft::engine {

// temperature, top_k, top_p, min_p and max_new_tokens (-> max_tokens) are
// taken when present, as vLLM does; absent fields keep SamplingParams'
// defaults. An explicit do_sample: false means greedy (temperature 0), as in
// transformers; a missing do_sample does not force greedy (Qwen3 and most
// chat models set the values they want sampled with). top_k <= 0 means off.
// EOS ids are NOT copied into stop_token_ids: they go to the generation loop's
// EOS list, so that ignore_eos can still override them. repetition_penalty
// has no counterpart yet and is ignored.
SamplingParams defaults_from(const io::GenerationConfig& generation);

// The end-of-sequence ids to stop on: generation_config.json's, then
// config.json's, without repeats (generation_config usually lists more, e.g.
// Qwen3's <|im_end|> and <|endoftext|>).
std::vector<int32_t> eos_token_ids(const io::GenerationConfig& generation, const io::ModelConfig& model);

}  // namespace flashdraft::engine
