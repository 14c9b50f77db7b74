#pragma once
// Verification of a DFlash draft against the target's logits (DFLASH.md §4).
//
// The target ran rows [anchor, d1 .. dk]; row i holds the logits for the
// token that follows row i, so draft d_{i+1} is checked against row i and the
// row after the last accepted draft gives the bonus token. The drafts are
// argmax picks, a point-mass proposal, which is why the sampling rule below
// (accept d with probability p(d), on rejection sample from p without d) is
// lossless: every emitted token is distributed exactly as plain sampling from
// the target would have drawn it.
#include <cstdint>
#include <span>

#include "engine/sampler.h"

namespace flashdraft::engine {

struct Acceptance {
  int32_t accepted = 0;  // a: drafts d1..da are kept
  int32_t bonus = 0;     // the target's own token after them (the next anchor)
};

// Greedy: the longest prefix with d_i == argmax(row i-1); bonus = argmax(row a).
// rows holds drafts.size() + 1 rows of `vocab` logits each.
Acceptance accept_greedy(std::span<const float> rows, int64_t vocab, std::span<const int32_t> drafts);

// The lossless rule with sampler.probs() as the target distribution of each
// row. With a greedy sampler it gives the same result as accept_greedy.
Acceptance accept_sampling(std::span<const float> rows, int64_t vocab, std::span<const int32_t> drafts,
                           Sampler& sampler);

// accept_greedy when the sampler is greedy (temperature 0), else accept_sampling.
Acceptance accept(std::span<const float> rows, int64_t vocab, std::span<const int32_t> drafts, Sampler& sampler);

}  // namespace flashdraft::engine
