#pragma once
// Text normalisation declared by tokenizer.json's "normalizer" field.
#include <string>
#include <string_view>

namespace flashdraft::tokenizer {

enum class Normalization { kNone, kNfc };

// Applies `form` to valid UTF-8 `text`.
std::string normalize(Normalization form, std::string_view text);

}  // namespace flashdraft::tokenizer
