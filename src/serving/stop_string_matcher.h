#pragma once
// Keeps stop strings out of streamed output. Generated text arrives in pieces;
// a stop string may straddle pieces, so any tail that could still grow into a
// stop string is held back until the next piece decides it.
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::serving {

class StopStringMatcher {
 public:
  // Throws flashdraft::Error on an empty stop string (it would match anywhere).
  explicit StopStringMatcher(std::vector<std::string> stops);

  struct Step {
    std::string emit;      // text that is now safe to show
    bool stopped = false;  // a stop string was found; emit ends right before it
  };

  // Feeds the next decoded piece. After a stop, further pieces are ignored.
  Step push(std::string_view piece);

  // End of generation without a stop: releases whatever was held back.
  std::string flush();

  bool stopped() const { return stopped_; }
  const std::string& held() const { return held_; }
  // The stop string that ended generation (empty while not stopped).
  const std::string& matched() const { return matched_; }

 private:
  // Length of the longest suffix of text that is a proper prefix of a stop string.
  size_t partial_match_length(std::string_view text) const;

  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace flashdraft::serving
