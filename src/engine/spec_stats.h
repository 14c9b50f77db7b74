#pragma once
// Counters of speculative decoding: how many drafts were verified, how many
// draft tokens they proposed, how many the target kept, and how often each
// draft position was kept. tau (tokens committed per target verify pass) is
// mean(a + 1) over the drafts.
#include <cstdint>
#include <string>
#include <vector>

namespace flashdraft::engine {

class SpecStats {
 public:
  // One verified draft of `proposed` tokens of which the first `accepted` were kept.
  void record(int64_t proposed, int64_t accepted);
  void merge(const SpecStats& other);

  int64_t drafts() const { return drafts_; }
  int64_t draft_tokens() const { return draft_tokens_; }
  int64_t accepted_tokens() const { return accepted_tokens_; }
  // accepted_at()[i]: drafts whose token at position i+1 was kept;
  // proposed_at()[i]: drafts that proposed a token at position i+1.
  const std::vector<int64_t>& accepted_at() const { return accepted_at_; }
  const std::vector<int64_t>& proposed_at() const { return proposed_at_; }

  double tau() const;  // 0 with no drafts
  // Per position i+1: P(kept | proposed); 0 where nothing was proposed.
  std::vector<double> acceptance_rates() const;
  // "tau 3.42, acceptance by position 0.81 0.66 ..." for summary lines.
  std::string summary() const;

 private:
  int64_t drafts_ = 0, draft_tokens_ = 0, accepted_tokens_ = 0;
  std::vector<int64_t> accepted_at_, proposed_at_;
};

}  // namespace flashdraft::engine
