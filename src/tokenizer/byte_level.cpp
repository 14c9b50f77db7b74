#include "tokenizer/byte_level.h"

#include <unordered_map>

namespace flashdraft::tokenizer::byte_level {
namespace {

std::string encode_code_point(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {  // the alphabet stays below U+0800
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

bool printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Tables {
  std::array<std::string, 256> to_text;
  std::unordered_map<uint32_t, uint8_t> to_byte;
  Tables() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : next++;
      to_text[b] = encode_code_point(cp);
      to_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_to_text(uint8_t byte) { return tables().to_text[byte]; }

std::optional<std::string> text_to_bytes(std::string_view text) {
  const auto& map = tables().to_byte;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<uint8_t>(text[i]);
    uint32_t cp;
    if (b0 < 0x80) {
      cp = b0;
      i += 1;
    } else if ((b0 & 0xE0) == 0xC0 && i + 1 < text.size()) {
      cp = ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      return std::nullopt;  // 3- and 4-byte characters are never in the alphabet
    }
    const auto it = map.find(cp);
    if (it == map.end()) return std::nullopt;
    out.push_back(static_cast<char>(it->second));
  }
  return out;
}

}  // namespace flashdraft::tokenizer::byte_level
