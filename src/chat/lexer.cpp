#include "chat/lexer.h"

#include <cstdint>

#include "chat/py_str.h"
#include "core/error.h"

namespace flashdraft::chat {
namespace {

[[noreturn]] void fail(int line, const std::string& what) {
  throw Error("chat template line " + std::to_string(line) + ": " + what);
}

// Jinja2 turns \r\n and \r into \n and drops one trailing newline.
std::string normalize_newlines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Length in bytes of the Python whitespace code point at s[i], 0 if none.
size_t space_len(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    return (is_ascii_space(static_cast<char>(c)) || (c >= 0x1C && c <= 0x1F)) ? 1 : 0;
  }
  size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + len > s.size()) return 0;
  const std::u32string cp = py::decode_utf8(std::string_view(s).substr(i, len));
  return cp.size() == 1 && py::is_space(cp[0]) ? len : 0;
}

size_t skip_space(const std::string& s, size_t i) {
  while (i < s.size()) {
    const size_t n = space_len(s, i);
    if (n == 0) break;
    i += n;
  }
  return i;
}

bool all_space(const std::string& s) {
  size_t i = 0;
  return !s.empty() && skip_space(s, i) == s.size();
}

std::string rstrip_space(const std::string& s) {
  return py::strip(s, std::nullopt, false, true);
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : src_(normalize_newlines(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;  // lstrip_blocks also applies to a tag at the very start
    while (pos_ < src_.size()) {
      const size_t tag = find_tag_start(pos_);
      std::string text = src_.substr(pos_, (tag == std::string::npos ? src_.size() : tag) - pos_);
      if (tag == std::string::npos) {
        emit_data(text, pos_);
        pos_ = src_.size();
        break;
      }
      const char type = src_[tag + 1];  // '#', '%' or '{'
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (sign != '-' && sign != '+') sign = '\0';
      if (sign == '-') {
        text = rstrip_space(text);
      } else if (sign != '+' && type != '{') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && all_space(text.substr(l_pos))) text.resize(l_pos);
      }
      emit_data(text, pos_);
      const size_t inner = tag + 2 + (sign ? 1 : 0);
      if (type == '#') {
        line_starting = lex_comment(tag, inner);
      } else {
        line_starting = lex_tag(tag, inner, type == '%');
      }
    }
    out_.push_back({Token::Kind::End, "", line_at(src_.size())});
    return std::move(out_);
  }

 private:
  int line_at(size_t pos) {
    // Tokens are produced left to right, so count newlines incrementally.
    while (counted_ < pos && counted_ < src_.size()) {
      if (src_[counted_] == '\n') ++line_;
      ++counted_;
    }
    return line_;
  }

  size_t find_tag_start(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '#' || src_[i + 1] == '%' || src_[i + 1] == '{')) return i;
    }
    return std::string::npos;
  }

  void emit_data(const std::string& text, size_t at) {
    if (!text.empty()) out_.push_back({Token::Kind::Data, text, line_at(at)});
  }

  // Returns whether the consumed text ends with a newline (Jinja's line_starting).
  bool lex_comment(size_t tag, size_t inner) {
    const int line = line_at(tag);
    if (inner >= src_.size()) {
      // Jinja2's lexer stops silently when a template ends right after "{#".
      pos_ = src_.size();
      return false;
    }
    for (size_t i = src_.find("#}", inner); i != std::string::npos; i = src_.find("#}", i + 1)) {
      const bool minus = i > inner && src_[i - 1] == '-';
      pos_ = i + 2;
      if (minus) {
        pos_ = skip_space(src_, pos_);
      } else if (!(i > inner && src_[i - 1] == '+') && pos_ < src_.size() && src_[pos_] == '\n') {
        ++pos_;  // trim_blocks
      }
      return pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    fail(line, "missing end of comment tag '#}'");
  }

  bool lex_tag(size_t tag, size_t inner, bool block) {
    const int tag_line = line_at(tag);
    out_.push_back({block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, "", tag_line});
    pos_ = inner;
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) fail(tag_line, std::string("unclosed tag, expected '") + (block ? "%}" : "}}") + "'");
      if (balance.empty() && try_end(block)) return pos_ > 0 && src_[pos_ - 1] == '\n';
      const size_t sp = skip_space(src_, pos_);
      if (sp != pos_) {
        pos_ = sp;
        continue;
      }
      lex_expression_token(balance);
    }
  }

  bool try_end(bool block) {
    const char* end = block ? "%}" : "}}";
    auto at = [&](size_t p, const char* s) { return src_.compare(p, 2, s) == 0; };
    if (block && src_[pos_] == '+' && at(pos_ + 1, end)) {
      push_end(block);
      pos_ += 3;
      return true;
    }
    if (src_[pos_] == '-' && at(pos_ + 1, end)) {
      push_end(block);
      pos_ = skip_space(src_, pos_ + 3);
      return true;
    }
    if (at(pos_, end)) {
      push_end(block);
      pos_ += 2;
      if (block && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;  // trim_blocks
      return true;
    }
    return false;
  }

  void push_end(bool block) { out_.push_back({block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, "", line_at(pos_)}); }

  void lex_expression_token(std::vector<char>& balance) {
    const int line = line_at(pos_);
    const char c = src_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(line);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos_;
      while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
      out_.push_back({Token::Kind::Name, src_.substr(pos_, e - pos_), line});
      pos_ = e;
      return;
    }
    if (c == '\'' || c == '"') return lex_string(line);
    static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : two) {
      if (src_.compare(pos_, 2, op) == 0) {
        out_.push_back({Token::Kind::Op, op, line});
        pos_ += 2;
        return;
      }
    }
    static const std::string one = "+-/*%~[](){}><=.:|,;";
    if (one.find(c) == std::string::npos) {
      fail(line, std::string("unexpected character '") + c + "' in tag");
    }
    if (c == '(' || c == '[' || c == '{') balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail(line, std::string("unexpected '") + c + "'");
      if (balance.back() != c) fail(line, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
      balance.pop_back();
    }
    out_.push_back({Token::Kind::Op, std::string(1, c), line});
    ++pos_;
  }

  size_t digits(size_t p) const {
    // Jinja allows single underscores between digits.
    while (p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[p])) ||
                               (src_[p] == '_' && p + 1 < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p + 1])))))
      ++p;
    return p;
  }

  void lex_number(int line) {
    size_t e = digits(pos_);
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      e = digits(e + 1);
      is_float = true;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && std::isdigit(static_cast<unsigned char>(src_[x]))) {
        e = digits(x);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i)
      if (src_[i] != '_') text += src_[i];
    if (!is_float && text.size() > 1 && text[0] == '0' && text.find_first_not_of('0') != std::string::npos)
      fail(line, "unsupported integer literal '" + text + "' (leading zeros)");
    out_.push_back({is_float ? Token::Kind::Float : Token::Kind::Integer, text, line});
    pos_ = e;
  }

  void lex_string(int line) {
    const char quote = src_[pos_];
    std::string raw;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size()) fail(line, "unterminated string literal");
      if (src_[i] == '\\' && i + 1 < src_.size()) {
        raw += src_[i];
        raw += src_[i + 1];
        i += 2;
        continue;
      }
      if (src_[i] == quote) break;
      raw += src_[i++];
    }
    pos_ = i + 1;
    out_.push_back({Token::Kind::String, unescape(raw, line), line});
  }

  // Python's "unicode-escape" decoding, which Jinja applies to string literals.
  static std::string unescape(const std::string& raw, int line) {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\' || i + 1 >= raw.size()) {
        out += raw[i];
        continue;
      }
      const char e = raw[++i];
      auto hex = [&](int n) {
        uint32_t v = 0;
        for (int k = 1; k <= n; ++k) {
          const char h = i + k < raw.size() ? raw[i + k] : '\0';
          if (!std::isxdigit(static_cast<unsigned char>(h))) fail(line, "truncated \\x/\\u escape in string literal");
          v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        i += n;
        py::append_utf8(out, v);
      };
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\n': break;  // line continuation
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = 0;
            int n = 0;
            while (n < 3 && i < raw.size() && raw[i] >= '0' && raw[i] <= '7') {
              v = v * 8 + static_cast<uint32_t>(raw[i] - '0');
              ++i;
              ++n;
            }
            --i;
            py::append_utf8(out, v);
          } else if (e == 'N') {
            fail(line, "unsupported \\N{...} escape in string literal");
          } else {
            out += '\\';  // Python keeps unknown escapes verbatim
            out += e;
          }
      }
    }
    return out;
  }

  std::string src_;
  size_t pos_ = 0;
  size_t counted_ = 0;
  int line_ = 1;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace flashdraft::chat
