#include "serving/stop_string_matcher.h"

#include <algorithm>

#include "core/error.h"
#include "serving/partial_match.h"

namespace flashdraft::serving {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (size_t i = 0; i < stops_.size(); ++i) {
    if (stops_[i].empty()) {
      throw Error("stop string #" + std::to_string(i + 1) + " is empty; stop strings must have at least one character");
    }
  }
}

StopStringMatcher::Step StopStringMatcher::push(std::string_view piece) {
  Step step;
  if (stopped_) return step;
  held_.append(piece);

  // The earliest match wins: text before it is the model's answer, the rest is not.
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const std::string& stop : stops_) {
    size_t at = held_.find(stop);
    if (at != std::string::npos && (best == std::string::npos || at < best)) {
      best = at;
      best_stop = &stop;
    }
  }
  if (best_stop != nullptr) {
    step.emit = held_.substr(0, best);
    step.stopped = true;
    stopped_ = true;
    matched_ = *best_stop;
    held_.clear();
    return step;
  }

  // No full match: everything except a tail that might begin a stop string is
  // final. A match cannot start inside the emitted part, since that would make
  // a longer tail a stop-string prefix.
  size_t keep = partial_match_length(held_);
  step.emit = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return step;
}

std::string StopStringMatcher::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

size_t StopStringMatcher::partial_match_length(std::string_view text) const {
  size_t longest = 0;
  for (const std::string& stop : stops_) longest = std::max(longest, serving::partial_match_length(text, stop));
  return longest;
}

}  // namespace flashdraft::serving
