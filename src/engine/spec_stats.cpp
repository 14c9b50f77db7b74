#include "engine/spec_stats.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace flashdraft::engine {

void SpecStats::record(int64_t proposed, int64_t accepted) {
  if (proposed < 0 || accepted < 0 || accepted > proposed) {
    throw Error(fmt::format("spec stats: accepted {} of {} proposed draft tokens is impossible", accepted, proposed));
  }
  ++drafts_;
  draft_tokens_ += proposed;
  accepted_tokens_ += accepted;
  const auto k = static_cast<size_t>(proposed);
  if (proposed_at_.size() < k) {
    proposed_at_.resize(k, 0);
    accepted_at_.resize(k, 0);
  }
  for (size_t i = 0; i < k; ++i) ++proposed_at_[i];
  for (size_t i = 0; i < static_cast<size_t>(accepted); ++i) ++accepted_at_[i];
}

void SpecStats::record_length(int64_t k) {
  if (k < 0) throw Error(fmt::format("spec stats: a draft of {} tokens is impossible", k));
  if (lengths_.size() <= static_cast<size_t>(k)) lengths_.resize(static_cast<size_t>(k) + 1, 0);
  ++lengths_[static_cast<size_t>(k)];
}

double SpecStats::mean_draft_length() const {
  int64_t steps = 0, drafted = 0;
  for (size_t k = 0; k < lengths_.size(); ++k) {
    steps += lengths_[k];
    drafted += static_cast<int64_t>(k) * lengths_[k];
  }
  return steps == 0 ? 0.0 : static_cast<double>(drafted) / static_cast<double>(steps);
}

void SpecStats::merge(const SpecStats& other) {
  drafts_ += other.drafts_;
  draft_tokens_ += other.draft_tokens_;
  accepted_tokens_ += other.accepted_tokens_;
  const size_t k = std::max(proposed_at_.size(), other.proposed_at_.size());
  proposed_at_.resize(k, 0);
  accepted_at_.resize(k, 0);
  for (size_t i = 0; i < other.proposed_at_.size(); ++i) {
    proposed_at_[i] += other.proposed_at_[i];
    accepted_at_[i] += other.accepted_at_[i];
  }
  if (lengths_.size() < other.lengths_.size()) lengths_.resize(other.lengths_.size(), 0);
  for (size_t k = 0; k < other.lengths_.size(); ++k) lengths_[k] += other.lengths_[k];
}

double SpecStats::tau() const {
  if (drafts_ == 0) return 0.0;
  return static_cast<double>(accepted_tokens_ + drafts_) / static_cast<double>(drafts_);
}

std::vector<double> SpecStats::acceptance_rates() const {
  std::vector<double> rates(proposed_at_.size(), 0.0);
  for (size_t i = 0; i < rates.size(); ++i) {
    if (proposed_at_[i] > 0) rates[i] = static_cast<double>(accepted_at_[i]) / static_cast<double>(proposed_at_[i]);
  }
  return rates;
}

std::string SpecStats::summary() const {
  std::string s = fmt::format("tau {:.2f} ({} drafts, {}/{} draft tokens accepted), acceptance by position", tau(),
                              drafts_, accepted_tokens_, draft_tokens_);
  for (double r : acceptance_rates()) s += fmt::format(" {:.2f}", r);
  if (!lengths_.empty()) s += ", " + lengths_summary();
  return s;
}

std::string SpecStats::lengths_summary() const {
  std::string s = fmt::format("draft lengths mean {:.1f} (", mean_draft_length());
  bool first = true;
  for (size_t k = 0; k < lengths_.size(); ++k) {
    if (lengths_[k] == 0) continue;
    s += fmt::format("{}{}:{}", first ? "" : " ", k, lengths_[k]);
    first = false;
  }
  return s + ")";
}

}  // namespace flashdraft::engine
