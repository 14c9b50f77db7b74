#include "chat/py_str.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace flashdraft::chat::py {

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Strings reach us from nlohmann::json (validated UTF-8) or from template
// literals; a stray byte is kept as U+FFFD rather than aborting a render.
std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      out += U'\uFFFD';
      ++i;
      continue;
    }
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    bool ok = true;
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out += U'\uFFFD';
      ++i;
      continue;
    }
    out += cp;
    i += len;
  }
  return out;
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) append_utf8(out, cp);
  return out;
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool is_space(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D:
    case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x20:
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string u = decode_utf8(s);
  const std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  size_t b = 0, e = u.size();
  if (left) while (b < e && strippable(u[b])) ++b;
  if (right) while (e > b && strippable(u[e - 1])) --e;
  return encode_utf8(std::u32string_view(u).substr(b, e - b));
}

static std::vector<std::string> split_whitespace(std::string_view s, long maxsplit, bool from_right) {
  std::u32string u = decode_utf8(s);
  if (from_right) std::reverse(u.begin(), u.end());
  std::vector<std::u32string> parts;
  size_t i = 0;
  while (i < u.size()) {
    while (i < u.size() && is_space(u[i])) ++i;
    if (i == u.size()) break;
    if (maxsplit >= 0 && static_cast<long>(parts.size()) == maxsplit) {
      // Python keeps the remainder verbatim except its leading whitespace.
      size_t e = u.size();
      parts.push_back(u.substr(i, e - i));
      i = e;
      break;
    }
    size_t j = i;
    while (j < u.size() && !is_space(u[j])) ++j;
    parts.push_back(u.substr(i, j - i));
    i = j;
  }
  std::vector<std::string> out;
  for (auto& p : parts) {
    if (from_right) std::reverse(p.begin(), p.end());
    out.push_back(encode_utf8(p));
  }
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, long maxsplit) {
  if (!sep) return split_whitespace(s, maxsplit, false);
  if (sep->empty()) throw Error("empty separator");
  std::vector<std::string> out;
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
    const size_t hit = s.find(*sep, pos);
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(pos, hit - pos));
    pos = hit + sep->size();
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, long maxsplit) {
  if (!sep) return split_whitespace(s, maxsplit, true);
  if (sep->empty()) throw Error("empty separator");
  std::vector<std::string> out;
  size_t end = s.size();
  while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
    if (end < sep->size()) break;
    const size_t hit = s.rfind(*sep, end - sep->size());
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
    end = hit;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  const std::u32string u = decode_utf8(s);
  std::vector<std::string> lines;
  size_t b = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    const char32_t c = u[i];
    const bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                     c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) continue;
    size_t end = i + 1;
    if (c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') end = i + 2;
    lines.push_back(encode_utf8(std::u32string_view(u).substr(b, (keepends ? end : i) - b)));
    b = end;
    i = end - 1;
  }
  if (b < u.size()) lines.push_back(encode_utf8(std::u32string_view(u).substr(b)));
  return lines;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, long count) {
  std::string out;
  long done = 0;
  if (old.empty()) {
    // Python inserts the replacement before every code point and at the end.
    const std::u32string u = decode_utf8(s);
    for (char32_t cp : u) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      append_utf8(out, cp);
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t pos = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out += s.substr(pos, hit - pos);
    out += repl;
    pos = hit + old.size();
    ++done;
  }
  out += s.substr(pos);
  return out;
}

// Python applies Unicode's full (one-to-many) case mappings where utf8proc
// only knows the simple ones; these are the unconditional special cases that
// occur in ordinary text.
namespace {

struct SpecialCase {
  char32_t cp;
  const char* upper;
  const char* title;
};
constexpr SpecialCase kSpecialCases[] = {
    {U'\u00DF', "SS", "Ss"},          {U'\uFB00', "FF", "Ff"},         {U'\uFB01', "FI", "Fi"},
    {U'\uFB02', "FL", "Fl"},          {U'\uFB03', "FFI", "Ffi"},       {U'\uFB04', "FFL", "Ffl"},
    {U'\uFB05', "ST", "St"},          {U'\uFB06', "ST", "St"},         {U'\u0149', "\u02BCN", "\u02BCN"},
    {U'\u01F0', "J\u030C", "J\u030C"}, {U'\u0587', "\u0535\u0552", "\u0535\u0582"},
};

enum class Case { Upper, Lower, Title };

void append_cased(std::string& out, char32_t cp, Case to) {
  if (to == Case::Lower) {
    if (cp == U'\u0130') {
      out += "i\u0307";  // capital I with dot above lowers to two code points
      return;
    }
    append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    return;
  }
  for (const auto& sc : kSpecialCases)
    if (sc.cp == cp) {
      out += to == Case::Upper ? sc.upper : sc.title;
      return;
    }
  const auto c = static_cast<utf8proc_int32_t>(cp);
  append_utf8(out, static_cast<char32_t>(to == Case::Upper ? utf8proc_toupper(c) : utf8proc_totitle(c)));
}

}  // namespace

static std::string map_case(std::string_view s, Case to) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : decode_utf8(s)) append_cased(out, cp, to);
  return out;
}

std::string upper(std::string_view s) { return map_case(s, Case::Upper); }
std::string lower(std::string_view s) { return map_case(s, Case::Lower); }

std::string capitalize(std::string_view s) {
  const std::u32string u = decode_utf8(s);
  std::string out;
  for (size_t i = 0; i < u.size(); ++i) append_cased(out, u[i], i == 0 ? Case::Title : Case::Lower);
  return out;
}

static bool is_cased(char32_t cp) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

std::string title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t cp : decode_utf8(s)) {
    append_cased(out, cp, previous_cased ? Case::Lower : Case::Title);
    previous_cased = is_cased(cp);
  }
  return out;
}

long find(std::string_view s, std::string_view sub, bool reverse) {
  const size_t hit = reverse ? s.rfind(sub) : s.find(sub);
  if (hit == std::string_view::npos) return -1;
  return static_cast<long>(code_point_count(s.substr(0, hit)));
}

long count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<long>(code_point_count(s)) + 1;
  long n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size())) ++n;
  return n;
}

// str.isprintable(): everything except control, format, surrogate, private,
// unassigned, and separators other than the ASCII space.
static bool is_printable(char32_t cp) {
  if (cp == ' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

std::string repr(std::string_view s) {
  const std::u32string u = decode_utf8(s);
  const bool has_single = u.find(U'\'') != std::u32string::npos;
  const bool has_double = u.find(U'"') != std::u32string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (char32_t cp : u) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x7F && cp >= 0x20) {
      out += static_cast<char>(cp);
    } else if (is_printable(cp)) {
      append_utf8(out, cp);
    } else {
      if (cp <= 0xFF) std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      else if (cp <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      else std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    }
  }
  out += quote;
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exp10 = std::stoi(sci.substr(e_pos + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exp10 < -4 || exp10 >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return out + eb;
  }
  if (exp10 < 0) {
    out += "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
  } else if (static_cast<int>(digits.size()) <= exp10 + 1) {
    out += digits + std::string(static_cast<size_t>(exp10 + 1) - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, static_cast<size_t>(exp10 + 1)) + "." + digits.substr(static_cast<size_t>(exp10 + 1));
  }
  return out;
}

}  // namespace flashdraft::chat::py
