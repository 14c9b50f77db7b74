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
// and dropped: lossless, and the step stays one graph); each length's step
// is summed afresh from per-position sums of the requests' rates (~1.5 us
// for 16 requests on the development VM, a step's host budget being tens).
//
// Prefill rows sharing the step are left out: they cost the same whatever
// the drafts, and counting their time would make drafting look cheaper.
//
// A request's first draft, or its first after steps without, pays for the
// drafter context of the rows it committed meanwhile (DraftCandidate::
// catch_up). A request that has not drafted yet pays for all of it, its
// prompt: its first draft is a bet on text the drafter has not been seen to
// follow (without that, on the GPU, 16 prompts of 1900 rows were caught up
// for first drafts the drafter could not follow: adaptive 0.90x plain). One
// that has drafted before spreads it over the tokens it has left at the
// step's expected rate (DraftCandidate::tokens_left): those rows are written
// whenever it drafts again, and priced whole they would grow with every
// plain step until the batch could never draft again (adaptive never
// drafted at 64 HumanEval requests on the GPU: 0.95x plain).
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
  int64_t catch_up = 0;    // rows of its context that wait to be written before it drafts
  int64_t tokens_left = 0; // tokens it may still produce, to spread its catch-up over (0: priced whole)
  // P(a >= j) for j = 1 .. max_drafts (non-increasing).
  std::vector<double> accept;
};

struct DraftOptions {
  bool one_length = false;  // every adaptive request verifies the same length (see above)
  // With one_length: the shared lengths to choose among (ModelRunner::
  // graph_draft_lengths); empty: 0 .. the longest max_drafts.
  std::vector<int64_t> lengths;
};

// Draft lengths, one per candidate.
std::vector<int64_t> choose_draft_lengths(std::span<const DraftCandidate> candidates, const StepCostModel& costs,
                                          const DraftOptions& options = {});

// Expected committed tokens of one request drafting k: 1 + sum_{j <= k} P(a >= j).
double expected_tokens(const DraftCandidate& c, int64_t k);
// The rows of c's catch-up that a step drafting k counts (see above).
double catch_up_share(const DraftCandidate& c, int64_t k);

}  // namespace flashdraft::engine
