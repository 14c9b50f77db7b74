#pragma once
// Token ids on the command line, written as a JSON array: "[151644, 872]".
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::cli {

// Throws UsageError naming `flag` when text is not a JSON array of integers
// in [0, vocab_size).
std::vector<int32_t> parse_token_ids(std::string_view text, std::string_view flag, int64_t vocab_size);
// Compact JSON array, no spaces: the form parse_token_ids reads back.
std::string format_token_ids(const std::vector<int32_t>& ids);

}  // namespace flashdraft::cli
