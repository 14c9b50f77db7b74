#include "serving/partial_match.h"

#include <algorithm>

namespace flashdraft::serving {

size_t partial_match_length(std::string_view text, std::string_view marker) {
  if (marker.empty()) return 0;
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace flashdraft::serving
