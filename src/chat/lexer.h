#pragma once
// Splits a template into text and tag tokens with Jinja2's whitespace rules
// as transformers configures them (trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False).
#include <string>
#include <vector>

namespace flashdraft::chat {

struct Token {
  enum class Kind { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Op, End };
  Kind kind;
  std::string text;  // Data text, name, decoded string literal, number spelling, operator
  int line;
};

std::vector<Token> tokenize(const std::string& source);

}  // namespace flashdraft::chat
