#pragma once
// The reference of Backend::sample and Backend::accept (ops/backend.h has
// their semantics) on host rows: the one CPU implementation of temperature,
// top-k, top-p and min-p. The CPU backend runs these; tests use
// sample_weights() for a row's exact distribution.
#include <cstdint>

#include "ops/backend.h"

namespace flashdraft::ops::cpu {

// The distribution sample() draws row `logits` from, unnormalised:
// weights[j] = the weight of token j if the filters keep it, else 0 (greedy:
// 1 at the argmax). False, weights untouched, when the row cannot be sampled
// (a NaN or +inf logit, every logit -inf, or an empty row).
bool sample_weights(const float* logits, int64_t vocab, const SampleRow& params, float* weights);

// The first id at which the running sum (double, ascending ids) of the
// weights exceeds u * their total; the last positive one when rounding leaves
// the sum short; -1 when no weight is positive.
int32_t draw(const float* weights, int64_t vocab, double u);

// Backend::sample on one row; scratch holds `vocab` floats. -1 when the row
// cannot be sampled.
int32_t sample_row(const float* logits, int64_t vocab, const SampleRow& params, float* scratch);

// Backend::accept's decision for one sequence of rows whose tokens are
// already drawn: how many leading rows (the last excluded) drew their draft.
int32_t accepted_prefix(const int32_t* tokens, const SampleRow* rows, int64_t n_rows);

}  // namespace flashdraft::ops::cpu
