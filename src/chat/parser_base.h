#pragma once
// Token-stream helpers and the state the statement and expression parsers
// share (internal to the parser).
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"
#include "core/error.h"

namespace flashdraft::chat::parsing {

using K = Token::Kind;

inline ExprPtr make(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class ParserBase {
 public:
  explicit ParserBase(std::vector<Token> tokens) : t_(std::move(tokens)) {}

 protected:
  [[noreturn]] static void fail(int line, const std::string& what) {
    throw Error("chat template line " + std::to_string(line) + ": " + what);
  }

  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  const Token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool is_op(const char* op) const { return cur().kind == K::Op && cur().text == op; }
  bool is_name(const char* name) const { return cur().kind == K::Name && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case K::End: return "end of template";
      case K::BlockEnd: return "end of statement block";
      case K::VarEnd: return "end of print statement";
      case K::Data: return "template data";
      case K::String: return "string literal";
      default: return "'" + t.text + "'";
    }
  }

  void expect_op(const char* op) {
    if (!skip_op(op)) fail(cur().line, std::string("expected '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().kind != K::Name) fail(cur().line, "expected a name, got " + describe(cur()));
    return next().text;
  }
  void expect_block_end(const std::string& tag) {
    if (cur().kind != K::BlockEnd) fail(cur().line, "expected end of '" + tag + "' statement, got " + describe(cur()));
    next();
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int loop_depth_ = 0;
  std::set<std::string> macro_names_;
  std::vector<std::pair<std::string, int>> called_names_;  // calls of names that are not builtins
  std::vector<std::set<std::string>> macro_reads_;         // names read in each macro being parsed
};

}  // namespace flashdraft::chat::parsing
