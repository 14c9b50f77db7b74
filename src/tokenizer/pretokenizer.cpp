#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include "core/error.h"

namespace flashdraft::tokenizer {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

// Length of the UTF-8 character starting with `lead`.
size_t char_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Hugging Face compiles split patterns with Oniguruma, whose \s is Unicode
// White_Space. PCRE2's \s (with UCP) also matches U+180E, which Unicode
// dropped from White_Space in 6.3, so \s and \S are spelled out here.
constexpr std::string_view kWhiteSpace =
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string oniguruma_to_pcre2(const std::string& pattern, const std::string& where) {
  std::string out;
  bool in_class = false;
  bool class_start = false;  // just after '[' or '[^': a ']' here is literal
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    const bool at_class_start = class_start;
    class_start = false;
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        // Appended piece by piece: GCC 12 flags "[" + std::string(...) with a
        // false -Wrestrict once it inlines this into the unity batch.
        if (!in_class) out += '[';
        out += kWhiteSpace;
        if (!in_class) out += ']';
      } else if (e == 'S' && !in_class) {
        out += "[^";
        out += kWhiteSpace;
        out += ']';
      } else if (e == 'S' || e == 'Q') {
        throw Error(where + ": \\" + std::string(1, e) + (e == 'S' ? " inside [...]" : "") +
                    " is not supported in split patterns");
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    out += c;
    if (!in_class && c == '[') {
      in_class = class_start = true;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
    } else if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t end = pattern.find(":]", i + 2);  // POSIX class such as [:alpha:]
      if (end == std::string::npos) continue;
      out.append(pattern, i + 1, end + 2 - (i + 1));
      i = end + 1;
    } else if (in_class && c == ']' && !at_class_start) {
      in_class = false;
    }
  }
  return out;
}

}  // namespace

struct RegexSplitter::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  std::string where;
};

RegexSplitter::RegexSplitter(const std::string& pattern, bool literal, const std::string& where)
    : impl_(std::make_unique<Impl>()) {
  impl_->where = where;
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (literal) options |= PCRE2_LITERAL;
  const std::string translated = literal ? pattern : oniguruma_to_pcre2(pattern, where);
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), options,
                              &err, &err_offset, nullptr);
  if (impl_->code == nullptr)
    throw Error(where + ": regex does not compile at offset " + std::to_string(err_offset) + ": " +
                pcre2_message(err));
  // Without JIT (e.g. an unsupported CPU) matching still works, only slower.
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  // One match block per call keeps split() safe to call from many threads.
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                                          md.get(), nullptr)
                        : PCRE2_ERROR_JIT_STACKLIMIT;
    // The JIT's small machine stack can run out on huge inputs; the
    // interpreter keeps its backtracking state on the heap.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
      rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw Error(impl_->where + ": regex match failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t start = ov[0], end = ov[1];
    if (end == start) {  // empty matches split nothing; step over one character
      if (start >= text.size()) break;
      pos = start + char_length(static_cast<unsigned char>(text[start]));
      continue;
    }
    if (start > gap_start) out.push_back(text.substr(gap_start, start - gap_start));
    out.push_back(text.substr(start, end - start));
    gap_start = pos = end;
  }
  if (gap_start < text.size()) out.push_back(text.substr(gap_start));
}

}  // namespace flashdraft::tokenizer
