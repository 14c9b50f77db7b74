#pragma once
// Streaming parsers look for markers (<think>, </tool_call>) in text that
// arrives in pieces: a marker may straddle two pieces, so the tail that could
// still grow into one is held back.
#include <string_view>

namespace flashdraft::server {

// Length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker_length(std::string_view text, std::string_view marker);

}  // namespace flashdraft::server
