#pragma once
// GPT-2 byte-level alphabet: every byte gets a printable code point so that
// BPE vocabularies can be stored as text. Bytes that are already printable
// (and not space) map to themselves; the rest are shifted to U+0100 upward.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace flashdraft::tokenizer::byte_level {

// UTF-8 of the code point standing for `byte`.
const std::string& byte_to_text(uint8_t byte);

// Maps the byte-level text of a vocabulary entry back to raw bytes; nullopt
// if a character is outside the alphabet (e.g. an added token's content).
std::optional<std::string> text_to_bytes(std::string_view text);

}  // namespace flashdraft::tokenizer::byte_level
