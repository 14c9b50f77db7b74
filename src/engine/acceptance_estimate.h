#pragma once
// How likely each request's next draft is to be accepted, position by
// position, for the draft length policy.
//
// The unit is the conditional rate q[m] = P(draft position m is accepted |
// positions 1..m-1 were): a verify step of k drafts with a accepted tried
// positions 1..min(a + 1, k) and kept 1..a, whatever k was, so steps of any
// length add evidence. P(a >= j) = q[1] * ... * q[j].
//
// Two levels, both exponentially weighted counts (tried, kept) per position:
//   global: every request's steps (the drafter's running rates on this
//           workload), each position's counts with a prior worth
//           kPriorWeight steps: kPrior for position 1, which lets drafting
//           be tried at all before anything is known, and for position m
//           the global rate of position m - 1. So a position nobody has
//           reached yet is as likely as the one before it: when the first
//           drafts all fail at position 1, positions 2.. fall with it
//           (with a fixed prior they kept 0.8, and a few requests' first
//           drafts looked worth ~2 tokens when they were worth ~1);
//   request: its own steps, with the global rate as a prior worth
//           kPriorWeight steps: q = (kept + w * q_global) / (tried + w).
// A request's own counts decay with each of its steps (kRequestDecay), so a
// request that falls into a loop (drafts start passing) or out of one is
// followed within a few steps; while it does not draft they decay too
// (kIdleDecay), so its estimate drifts back to the global rate.
//
// A request that does not draft teaches nothing, so a pessimistic estimate
// would never be corrected (a request that falls into a loop after a hard
// start, or a global rate dragged down by a few unlucky first steps). After
// a wait of steps without drafts its rates are taken as at least the probe
// rates until it drafts: if drafting pays at those the policy drafts for it,
// and what the verify shows replaces the guess. Where drafting cannot pay
// even then (a busy machine) the probe costs nothing, since nothing is
// drafted. A probe rate is the global rate's upper confidence bound
// (kProbeZ standard errors above it, its evidence being the global counts),
// at most kPrior: a few unlucky first drafts leave the bound high, so the
// requests are probed as they were at the start; a workload the drafter
// fails at, seen on many drafts, leaves it low, and requests due a probe
// together (a batch that started at once) no longer all draft whole blocks
// to learn again what every earlier probe showed (at a long-context point
// where drafts pass a third of the time, such steps cost ~5% of a run).
// The wait starts at kProbeAfter and doubles after every probe,
// up to kProbeMax, so text the drafter cannot follow costs a probe every
// few dozen steps rather than every eighth; a request that drafts on its
// own estimate (its probe paid) is back to kProbeAfter.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/request.h"

namespace flashdraft::engine {

class AcceptanceEstimate {
 public:
  static constexpr double kPrior = 0.8;
  static constexpr double kPriorWeight = 2.0;
  static constexpr double kGlobalDecay = 0.999;
  static constexpr double kRequestDecay = 0.7;
  static constexpr double kIdleDecay = 0.9;
  static constexpr int64_t kProbeAfter = 8;
  static constexpr int64_t kProbeMax = 128;
  static constexpr double kProbeZ = 2.0;

  explicit AcceptanceEstimate(int64_t max_drafts);

  int64_t max_drafts() const { return max_k_; }
  // P(a >= j) for j = 1 .. out.size() (at most max_drafts) for the request.
  void cumulative(RequestId id, std::span<double> out) const;
  // Conditional global rate of position m (1-based).
  double global_rate(int64_t m) const;
  // The request's rate at position m, optimistic when it is due a probe.
  double request_rate(RequestId id, int64_t m) const;
  // What a probe takes position m's rate to be at least (see above).
  double probe_rate(int64_t m) const;

  // A verify step of `proposed` drafts of which the first `accepted` were kept.
  void observe(RequestId id, int64_t proposed, int64_t accepted);
  // A step in which the request decoded without drafts.
  void idle(RequestId id);
  void forget(RequestId id);

 private:
  struct Counts {
    std::vector<double> tried, kept;
    int64_t idle = 0;  // steps since its last draft
    int64_t wait = kProbeAfter;  // idle steps before its next probe
  };
  Counts& request(RequestId id);
  void update_global_rates();
  const Counts* find(RequestId id) const;  // null: no steps of its own yet
  // The conditional rate of position i + 1 for a request's counts (null: the global rate).
  double rate(const Counts* r, size_t i) const;

  int64_t max_k_;
  Counts global_;                     // counts seen, without the prior
  std::vector<double> global_rates_;  // of global_ and the prior, per position
  std::vector<double> probe_rates_;   // per position
  std::unordered_map<RequestId, Counts> requests_;
};

}  // namespace flashdraft::engine
