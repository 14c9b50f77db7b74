#include "server/held_text.h"

#include <algorithm>

namespace flashdraft::server {

size_t partial_marker_length(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace flashdraft::server
