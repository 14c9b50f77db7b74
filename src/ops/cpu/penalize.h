#pragma once
// The reference of Backend::penalize (ops/backend.h has its semantics) on
// one host row.
#include <cstdint>

#include "ops/backend.h"

namespace flashdraft::ops::cpu {

// items: row.items_count items of penalty_math::kItemWords words (the row's
// slice already applied); drafts: row.drafts_count ids (likewise). Throws
// flashdraft::Error for a token id outside [0, vocab).
void penalize_row(float* logits, int64_t vocab, const PenaltyRow& row, const int32_t* items, const int32_t* drafts);

}  // namespace flashdraft::ops::cpu
