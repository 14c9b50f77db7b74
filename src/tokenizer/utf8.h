#pragma once
// UTF-8 helpers shared by encode (input validation) and decode (lossy output).
#include <cstddef>
#include <string>
#include <string_view>

namespace flashdraft::tokenizer::utf8 {

// Byte offset of the first invalid sequence, or npos when `s` is valid UTF-8.
size_t find_invalid(std::string_view s);

// Appends `bytes` to `out`, replacing each maximal invalid subpart by U+FFFD
// (the same substitution Rust's String::from_utf8_lossy makes, which is what
// Hugging Face decode returns).
void append_lossy(std::string_view bytes, std::string& out);

// Length of the tail of `bytes` that is a proper prefix of a valid UTF-8
// sequence (0..3): bytes a streaming decoder must hold until more arrive.
size_t incomplete_tail(std::string_view bytes);

}  // namespace flashdraft::tokenizer::utf8
