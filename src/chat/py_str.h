#pragma once
// Python `str` semantics on UTF-8 strings. Jinja templates index, slice and
// strip strings by code point and use Python's notion of whitespace, so we
// cannot work on bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::chat::py {

std::u32string decode_utf8(std::string_view s);
std::string encode_utf8(std::u32string_view s);
void append_utf8(std::string& out, char32_t cp);
size_t code_point_count(std::string_view s);

// str.isspace() for one code point (also what `\s` and str.split() use).
bool is_space(char32_t cp);

// str.strip/lstrip/rstrip; chars == nullopt strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit; sep == nullopt splits on whitespace runs.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, long maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, long maxsplit);
// str.splitlines: breaks on \n, \r, \r\n, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029.
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view repl, long count);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);
std::string title(std::string_view s);
// str.find in code points (-1 when absent).
long find(std::string_view s, std::string_view sub, bool reverse);
long count(std::string_view s, std::string_view sub);

// repr(str): the quoting and escaping Python uses when a string sits in a list or dict.
std::string repr(std::string_view s);
// repr(float) / str(float): shortest round-trip digits, Python's switch to exponent form.
std::string float_repr(double d);

}  // namespace flashdraft::chat::py
