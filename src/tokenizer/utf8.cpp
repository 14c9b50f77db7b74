#include "tokenizer/utf8.h"

#include <cstdint>

namespace flashdraft::tokenizer::utf8 {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Sequence length implied by a lead byte; 0 for bytes that cannot start one.
int sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The second byte's range depends on the lead byte: this excludes overlong
// forms, surrogates and code points above U+10FFFF.
bool valid_second(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

// How many bytes from `pos` form a valid (possibly truncated) prefix of one
// sequence, and its full length. valid == full means a complete character.
struct Probe {
  size_t valid;
  size_t full;
};

Probe probe(std::string_view s, size_t pos) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  const int len = sequence_length(lead);
  if (len == 0) return {0, 1};
  size_t valid = 1;
  for (int k = 1; k < len && pos + k < s.size(); ++k) {
    const auto b = static_cast<uint8_t>(s[pos + k]);
    const bool ok = k == 1 ? valid_second(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++valid;
  }
  return {valid, static_cast<size_t>(len)};
}

}  // namespace

size_t find_invalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const Probe p = probe(s, i);
    if (p.valid != p.full) return i;
    i += p.full;
  }
  return std::string_view::npos;
}

void append_lossy(std::string_view bytes, std::string& out) {
  size_t i = 0;
  while (i < bytes.size()) {
    size_t run = i;
    while (run < bytes.size() && static_cast<uint8_t>(bytes[run]) < 0x80) ++run;
    out.append(bytes.substr(i, run - i));
    i = run;
    if (i >= bytes.size()) break;
    const Probe p = probe(bytes, i);
    if (p.valid == p.full) {
      out.append(bytes.substr(i, p.full));
      i += p.full;
    } else {
      out.append(kReplacement);
      i += p.valid == 0 ? 1 : p.valid;
    }
  }
}

size_t incomplete_tail(std::string_view bytes) {
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t pos = n - back;
    const auto b = static_cast<uint8_t>(bytes[pos]);
    if (b >= 0x80 && b <= 0xBF) continue;  // continuation: keep looking for a lead
    const Probe p = probe(bytes, pos);
    return (p.valid == back && p.full > back) ? back : 0;
  }
  return 0;
}

}  // namespace flashdraft::tokenizer::utf8
