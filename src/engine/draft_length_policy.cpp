#include "engine/draft_length_policy.h"

#include <algorithm>
#include <cstdint>

namespace flashdraft::engine {
namespace {

void add(StepShape& to, const StepShape& s, double sign) {
  to.seqs += sign * s.seqs;
  to.rows += sign * s.rows;
  to.logit_rows += sign * s.logit_rows;
  to.seq_keys += sign * s.seq_keys;
  to.row_keys += sign * s.row_keys;
  to.draft_seqs += sign * s.draft_seqs;
  to.draft_rows += sign * s.draft_rows;
  to.draft_keys += sign * s.draft_keys;
  to.draft_logit_rows += sign * s.draft_logit_rows;
}

// The step as the search moves one request's length at a time: the summed
// shape, how many requests have each row count (for StepShape::uneven) and
// the expected tokens.
class Batch {
 public:
  Batch(std::span<const DraftCandidate> c, std::vector<int64_t> k) : c_(c), k_(std::move(k)) {
    int64_t most = 0;
    for (const auto& x : c_) most = std::max(most, x.max_drafts);
    rows_count_.assign(static_cast<size_t>(most + 2), 0);
    per_.resize(c_.size());
    for (size_t i = 0; i < c_.size(); ++i) {
      // Up to the longest length of any request: one shared length may pad a request past its own.
      per_[i].resize(static_cast<size_t>(most + 1));
      for (int64_t j = 0; j <= most; ++j)
        per_[i][static_cast<size_t>(j)].add_decode(c_[i].context, 1 + j, c_[i].draft_block);
      enter(i);
    }
  }

  const std::vector<int64_t>& lengths() const { return k_; }
  int64_t length(size_t i) const { return k_[i]; }

  void set(size_t i, int64_t k) {
    leave(i);
    k_[i] = k;
    enter(i);
  }

  double rate(const StepCostModel& costs) const {
    StepShape s = shape_;
    s.uneven = distinct_ > 1;
    return tokens_ / std::max(costs.predict(s), 1e-12);
  }

 private:
  void enter(size_t i) {
    add(shape_, per_[i][static_cast<size_t>(k_[i])], 1);
    if (rows_count_[static_cast<size_t>(k_[i])]++ == 0) ++distinct_;
    tokens_ += expected_tokens(c_[i], k_[i]);
  }
  void leave(size_t i) {
    add(shape_, per_[i][static_cast<size_t>(k_[i])], -1);
    if (--rows_count_[static_cast<size_t>(k_[i])] == 0) --distinct_;
    tokens_ -= expected_tokens(c_[i], k_[i]);
  }

  std::span<const DraftCandidate> c_;
  std::vector<int64_t> k_;
  std::vector<std::vector<StepShape>> per_;  // per request and length: its share of the step
  std::vector<int64_t> rows_count_;          // requests per draft length
  int64_t distinct_ = 0;
  StepShape shape_;
  double tokens_ = 0;
};

}  // namespace

double expected_tokens(const DraftCandidate& c, int64_t k) {
  double t = 1.0;
  for (int64_t j = 0; j < k && j < static_cast<int64_t>(c.accept.size()); ++j) t += c.accept[static_cast<size_t>(j)];
  return t;
}

namespace {

// The adaptive requests' share of a step in which each verifies the same
// u drafts, in O(1) per u from sums over the requests (StepShape::
// add_decodes). Only a draft block shorter than 1 + u (never, with the
// engine's blocks) needs the requests one by one.
class SharedLength {
 public:
  explicit SharedLength(std::span<const DraftCandidate> candidates) : c_(candidates) {
    for (const DraftCandidate& c : c_) {
      if (c.fixed) continue;
      const auto b = static_cast<double>(c.draft_block);
      n_ += 1;
      context_ += static_cast<double>(c.context);
      block_rows_ += b;
      block_keys_ += b * (static_cast<double>(c.context) + b);
      min_block_ = std::min(min_block_, c.draft_block);
    }
  }

  void add(StepShape& s, int64_t u) const {
    if (n_ == 0) return;
    if (1 + u <= min_block_) return s.add_decodes(n_, 1 + u, context_, block_rows_, block_keys_);
    for (const DraftCandidate& c : c_)
      if (!c.fixed) s.add_decode(c.context, 1 + u, c.draft_block);
  }

 private:
  std::span<const DraftCandidate> c_;
  double n_ = 0, context_ = 0, block_rows_ = 0, block_keys_ = 0;
  int64_t min_block_ = INT64_MAX;
};

// DraftOptions::one_length: every adaptive request verifies the same u, so
// each u's step is the fixed-length requests' share plus SharedLength's,
// and its expected tokens come from the per-position sums of the requests'
// rates: O(requests + lengths), no allocation per length.
std::vector<int64_t> choose_one_length(std::span<const DraftCandidate> candidates, const StepCostModel& costs,
                                       std::span<const int64_t> lengths) {
  StepShape fixed;
  double fixed_tokens = 0;
  int64_t most = 0, adaptive = 0;
  std::vector<int64_t> fixed_rows;  // distinct row counts of the fixed-length requests
  const SharedLength shared(candidates);
  for (const DraftCandidate& c : candidates) {
    most = std::max(most, c.max_drafts);
    if (!c.fixed) {
      ++adaptive;
      continue;
    }
    fixed.add_decode(c.context, 1 + c.max_drafts, c.draft_block);
    fixed_tokens += expected_tokens(c, c.max_drafts);
    if (std::find(fixed_rows.begin(), fixed_rows.end(), 1 + c.max_drafts) == fixed_rows.end())
      fixed_rows.push_back(1 + c.max_drafts);
  }
  // accepted[j]: sum over adaptive requests of P(a >= j + 1).
  std::vector<double> accepted(static_cast<size_t>(most), 0.0);
  for (const DraftCandidate& c : candidates) {
    if (c.fixed) continue;
    const size_t m = std::min(c.accept.size(), accepted.size());
    for (size_t j = 0; j < m; ++j) accepted[j] += c.accept[j];
  }
  double best = -1, tokens = fixed_tokens + static_cast<double>(adaptive);
  int64_t best_u = 0;
  for (int64_t u = 0; u <= most; ++u) {
    if (u > 0) tokens += accepted[static_cast<size_t>(u - 1)];
    if (u > 0 && !lengths.empty() && std::find(lengths.begin(), lengths.end(), u) == lengths.end()) continue;
    StepShape s = fixed;
    shared.add(s, u);
    const bool new_rows =
        adaptive > 0 && std::find(fixed_rows.begin(), fixed_rows.end(), 1 + u) == fixed_rows.end();
    s.uneven = static_cast<int64_t>(fixed_rows.size()) + (new_rows ? 1 : 0) > 1;
    const double r = tokens / std::max(costs.predict(s), 1e-12);
    if (r > best) best = r, best_u = u;
  }
  std::vector<int64_t> k(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) k[i] = candidates[i].fixed ? candidates[i].max_drafts : best_u;
  return k;
}

}  // namespace

std::vector<int64_t> choose_draft_lengths(std::span<const DraftCandidate> candidates, const StepCostModel& costs,
                                          const DraftOptions& options) {
  if (options.one_length) return choose_one_length(candidates, costs, options.lengths);
  const size_t n = candidates.size();
  std::vector<int64_t> k(n, 0);
  int64_t most = 0;
  for (size_t i = 0; i < n; ++i) {
    if (candidates[i].fixed) k[i] = candidates[i].max_drafts;
    most = std::max(most, candidates[i].max_drafts);
  }
  Batch batch(candidates, k);

  // One length for everyone.
  double best = batch.rate(costs);
  int64_t best_u = 0;
  auto shared = [&](int64_t u) {
    for (size_t i = 0; i < n; ++i)
      if (!candidates[i].fixed) batch.set(i, std::min(u, candidates[i].max_drafts));
  };
  for (int64_t u = 1; u <= most; ++u) {
    shared(u);
    const double r = batch.rate(costs);
    if (r > best) best = r, best_u = u;
  }
  shared(best_u);

  // Then each request on its own.
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (candidates[i].fixed) continue;
      const int64_t was = batch.length(i);
      int64_t pick = was;
      for (int64_t j = 0; j <= candidates[i].max_drafts; ++j) {
        if (j == was) continue;
        batch.set(i, j);
        const double r = batch.rate(costs);
        if (r > best * (1 + 1e-9)) best = r, pick = j;
      }
      batch.set(i, pick);
      changed |= pick != was;
    }
    if (!changed) break;
  }
  return batch.lengths();
}

}  // namespace flashdraft::engine
