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
  // One decode step that drafted k tokens (0 included: the draft length
  // chosen for it, whether or not a draft was verified).
  void record_length(int64_t k);
  void merge(const SpecStats& other);

  int64_t drafts() const { return drafts_; }
  int64_t draft_tokens() const { return draft_tokens_; }
  int64_t accepted_tokens() const { return accepted_tokens_; }
  // accepted_at()[i]: drafts whose token at position i+1 was kept;
  // proposed_at()[i]: drafts that proposed a token at position i+1.
  const std::vector<int64_t>& accepted_at() const { return accepted_at_; }
  const std::vector<int64_t>& proposed_at() const { return proposed_at_; }
  // draft_lengths()[k]: decode steps that drafted k tokens.
  const std::vector<int64_t>& draft_lengths() const { return lengths_; }
  double mean_draft_length() const;  // 0 with no steps

  double tau() const;  // 0 with no drafts
  // Per position i+1: P(kept | proposed); 0 where nothing was proposed.
  std::vector<double> acceptance_rates() const;
  // "tau 3.42, acceptance by position 0.81 0.66 ..., draft lengths mean 5.1
  // (0:12 3:4 15:40)" for summary lines (draft lengths when recorded).
  std::string summary() const;
  // "draft lengths mean 5.1 (0:12 3:4 15:40)": steps per chosen length.
  std::string lengths_summary() const;

 private:
  int64_t drafts_ = 0, draft_tokens_ = 0, accepted_tokens_ = 0;
  std::vector<int64_t> accepted_at_, proposed_at_, lengths_;
};

}  // namespace flashdraft::engine
