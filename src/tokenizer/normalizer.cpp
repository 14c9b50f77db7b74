#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "core/error.h"

namespace flashdraft::tokenizer {
namespace {

// Every code point below U+0300 has NFC_Quick_Check=Yes and none of them
// composes with a predecessor, so text whose bytes are all below 0xCC (the
// lead byte of U+0300) is already NFC: the common ASCII/Latin-1 case skips
// utf8proc entirely.
bool trivially_nfc(std::string_view text) {
  for (unsigned char c : text)
    if (c >= 0xCC) return false;
  return true;
}

}  // namespace

std::string normalize(Normalization form, std::string_view text) {
  if (form == Normalization::kNone || trivially_nfc(text)) return std::string(text);
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                              static_cast<utf8proc_ssize_t>(text.size()), &out,
                              static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) throw Error(std::string("NFC normalisation failed: ") + utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

}  // namespace flashdraft::tokenizer
