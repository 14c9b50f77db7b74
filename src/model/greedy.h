#pragma once
// The smallest end-to-end use of the model, without a sampler or tokenizer:
// feed token ids, then extend greedily. Used by the parity tests and as the
// CLI's plain demo path.
#include <cstdint>
#include <span>
#include <vector>

#include "model/qwen3_model.h"

namespace flashdraft::model {

// Runs `prompt` (appending to `cache`), then `max_new` greedy steps, one token
// at a time; stops early after emitting a token in `stop_ids`. Returns the new tokens.
std::vector<int32_t> greedy_continue(Qwen3Model& model, KVCache& cache, std::span<const int32_t> prompt,
                                     int64_t max_new, std::span<const int64_t> stop_ids = {});

}  // namespace flashdraft::model
