#pragma once
// How long one engine step takes, predicted from its shape, so that the
// draft length policy can weigh what a longer draft is expected to commit
// against what it costs. One model per engine, hence per backend and model
// pair: it is fitted to that engine's own measured steps.
//
// The model is linear in features of the step, every coefficient >= 0:
//
//   seconds = c_step                                   fixed cost of a step (launches, host work, weight reads)
//           + c_row * R + sum_k c_hinge_k * max(0, R - k)  target rows R; hinges at 16, 64, 256 rows
//           + c_logit * L                              rows whose logits are computed and sampled (lm_head)
//           + c_seq * S                                sequences in the step (per-request overhead)
//           + c_seq_keys * sum_seq keys / 1024         KV read once per sequence (memory-bound attention)
//           + c_row_keys * sum_row keys / 1024         keys each row attends (compute-bound attention)
//           + c_draft * [drafter runs]                 the drafter pass's fixed cost
//           + c_draft_row * Rd                         drafter rows: its block per drafting request
//           + c_draft_keys * sum_drafter_row keys / 1024   the drafter attends to all context too
//           + c_uneven * [decode rows differ]          mixed draft lengths (no replayed decode graph)
//           + c_draft_logit * K                        drafts verified: the drafter's lm_head rows
//
// Nonnegative hinge coefficients make the row term convex and increasing: flat
// while a step is bound by reading the weights, then linear once it is bound
// by compute, which is the shape of a decode step on a GPU (and, less
// sharply, on a CPU). The attention terms make long contexts cost more per
// row, for the target and the drafter alike.
//
// Fitting: non-negative least squares (Lawson-Hanson) on exponentially
// decayed normal equations, so recent steps weigh most and the fit follows
// the machine as it warms up or gets busier. The engine seeds it with a few
// timed steps at start-up (cost_calibration.h) and then adds every step it
// runs: a refit after each of the first 64, then after every 8th, each
// starting from the terms the last fit used (one small solve when they have
// not changed: ~1 us rather than ~6). A measurement far from the prediction (a first call that allocates or
// records a graph, a descheduled process) is skipped once the model has data.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace flashdraft::engine {

// What a step runs, in the aggregates the model needs (sums over sequences).
struct StepShape {
  double seqs = 0;        // sequences (decode and prefill entries)
  double rows = 0;        // target rows
  double logit_rows = 0;  // rows whose logits are sampled: every decode row, the last row of a prefill chunk
  double seq_keys = 0;    // sum over sequences of the keys the last row attends (context + rows)
  double row_keys = 0;    // sum over rows of the keys each attends (causal)
  double draft_seqs = 0;  // sequences the drafter drafts for
  double draft_rows = 0;  // drafter rows: its whole block for each drafting sequence
  double draft_keys = 0;  // sum over drafter rows of the keys each attends (context + the whole block)
  double draft_logit_rows = 0;  // drafts verified (the drafter's rows with logits)
  bool uneven = false;    // decode entries with different row counts

  // Adds one sequence: `context` positions already in the KV cache, `rows`
  // new rows; a decode entry with rows > 1 is drafted for (rows - 1 drafts)
  // by a drafter block of max(rows, draft_block) rows (the runner drafts a
  // whole block whatever the draft length; see ModelRunner).
  void add_decode(int64_t context, int64_t rows, int64_t draft_block = 0);
  // add_decode for `seqs` sequences at once, each of `rows` rows with a
  // draft block of at least `rows`, from sums over them: of their contexts,
  // their blocks and block * (context + block). Every term is an integer
  // below 2^53, so this equals adding them one by one exactly.
  void add_decodes(double seqs, int64_t rows, double context_sum, double block_sum, double block_keys_sum);
  void add_prefill(int64_t context, int64_t rows);
};

class StepCostModel {
 public:
  static constexpr int kFeatures = 14;
  using Coefficients = std::array<double, kFeatures>;
  // Names of the coefficients, in order, for logs and tests.
  static const std::array<const char*, kFeatures>& names();

  // An empty model (predicts 0 until it has data).
  StepCostModel();
  // A model with these coefficients (seconds per feature unit); learn = false
  // keeps them fixed (tests, a policy that must not depend on the clock).
  explicit StepCostModel(const Coefficients& coefficients, bool learn = false);

  static std::array<double, kFeatures> features(const StepShape& shape);
  double predict(const StepShape& shape) const;

  // One measured step. weight: how much it counts against one online step
  // (calibration steps count more: they are few and clean). refit_now =
  // false leaves a refit that falls due to refit_if_due(): the engine runs it
  // while the backend works on the next step (a refit is ~1 us on the
  // development VM, ~5 on the GPU machine's host, and the first 64 steps
  // each refit), so the next step's draft lengths come from the fit before
  // this step.
  void observe(const StepShape& shape, double seconds, double weight = 1.0, bool refit_now = true);
  void refit_if_due();
  bool learning() const { return learn_; }
  int64_t observations() const { return observations_; }
  const Coefficients& coefficients() const { return coef_; }
  // "c_step 1.2 ms, c_row 0.41 ms, ..." (nonzero terms) for logs.
  std::string describe() const;

 private:
  void refit();

  Coefficients coef_{};
  bool learn_ = true;
  int64_t observations_ = 0, since_fit_ = 0;
  bool refit_due_ = false;
  int outliers_in_a_row_ = 0;
  // Decayed normal equations: sum w x x^T and sum w x y.
  std::array<double, kFeatures * kFeatures> xtx_{};
  std::array<double, kFeatures> xty_{};
};

// Non-negative least squares: x >= 0 minimising |A x - b|^2 given the
// normal equations (ata = A^T A, n x n row-major; atb = A^T b). Lawson and
// Hanson's active set method; a small ridge keeps unidentified terms at 0.
// start (optional, n values): a previous solution, whose nonzero terms the
// search begins with (same minimiser, found in one solve when the terms in
// use have not changed: the engine refits after every few steps).
std::vector<double> nnls_normal(std::span<const double> ata, std::span<const double> atb, int n,
                                std::span<const double> start = {});

}  // namespace flashdraft::engine
