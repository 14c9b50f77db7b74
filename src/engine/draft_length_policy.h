#pragma once
// Chooses each decoding request's draft length for the next step: the k in
// 0 .. max_drafts per request that maximises the batch's expected committed
// tokens per second,
//
//     sum_i (1 + P_i(a >= 1) + ... + P_i(a >= k_i))  /  T(step with rows 1 + k_i each)
//
// with P_i from AcceptanceEstimate and T from StepCostModel (whose drafter
// term is paid only when some k_i > 0, so a batch that gains too little from
// drafting skips the drafter pass entirely). Requests with a fixed length
// keep it and still count in T.
//
// Search: the best length shared by every adaptive request first (this finds
// "everyone drafts" and "nobody drafts", between which the drafter's fixed
// cost makes the objective jump), then rounds of coordinate ascent, one
// request at a time over all its lengths, until no change helps. A few
// hundred evaluations of a 13-term dot product per step.
//
// One length per step (DraftOptions::one_length): where the backend replays
// recorded decode steps (CUDA graphs), recorded per rows per sequence, a
// step whose requests verify different lengths runs eagerly. There the
// search is the shared length alone, which every adaptive request then
// verifies, also one near its end (drafts past its last token are verified
// and dropped: lossless, and the step stays one graph). The requests' share
// of each length's step is summed in closed form and its expected tokens
// from per-position sums of the requests' rates: O(requests + lengths),
// ~0.6 us for 16 requests on the development VM (it was ~1.5 us summing
// each request's rows for each length, on a decode step of ~280 us at a
// GPU long-context point, where every microsecond is a third of a percent).
//
// Prefill rows sharing the step are left out: they cost the same whatever
// the drafts, and counting their time would make drafting look cheaper.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/step_cost_model.h"

namespace flashdraft::engine {

struct DraftCandidate {
  int64_t context = 0;     // positions already in the KV cache (the anchor goes at this one)
  int64_t max_drafts = 0;  // most drafts that could be useful (0: this request decodes plainly)
  bool fixed = false;      // drafts exactly max_drafts
  int64_t draft_block = 0; // rows of the drafter's block when it drafts (StepShape::add_decode)
  // P(a >= j) for j = 1 .. max_drafts (non-increasing).
  std::vector<double> accept;
};

struct DraftOptions {
  bool one_length = false;  // every adaptive request verifies the same length (see above)
  // With one_length: the shared lengths to choose among (ModelRunner::
  // graph_draft_lengths, not copied: the choice runs every step); empty:
  // 0 .. the longest max_drafts.
  std::span<const int64_t> lengths;
};

// Draft lengths, one per candidate.
std::vector<int64_t> choose_draft_lengths(std::span<const DraftCandidate> candidates, const StepCostModel& costs,
                                          const DraftOptions& options = {});

// Expected committed tokens of one request drafting k: 1 + sum_{j <= k} P(a >= j).
double expected_tokens(const DraftCandidate& c, int64_t k);

}  // namespace flashdraft::engine
