#pragma once
// Streamed text arrives in pieces, and a marker (a stop string, <think>,
// <tool_call>) may straddle two of them: whoever scans for one holds back the
// tail that could still grow into it. One definition of that tail for the
// stop strings here and the server's streaming parsers.
#include <cstddef>
#include <string_view>

namespace flashdraft::serving {

// Length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_match_length(std::string_view text, std::string_view marker);

}  // namespace flashdraft::serving
