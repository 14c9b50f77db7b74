#pragma once
// Jinja2 expressions with Jinja2's precedence, lowest first: conditional,
// or, and, not, comparisons, + -, ~, * / // %, **, unary, then postfix
// (attributes, subscripts, calls), filters and tests.
#include "chat/parser_base.h"

namespace flashdraft::chat::parsing {

class ExpressionParser : protected ParserBase {
 public:
  using ParserBase::ParserBase;

 protected:
  bool is_tuple_end(const char* extra_end) const;
  ExprPtr parse_tuple(bool explicit_parens = false, bool with_condexpr = true, const char* extra_end = nullptr);
  ExprPtr parse_expression();
  ExprPtr binary(Expr::Kind kind, const std::string& name, ExprPtr l, ExprPtr r, int line);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  void parse_call_args(Expr& e);
  ExprPtr parse_call(ExprPtr callee);
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);
};

}  // namespace flashdraft::chat::parsing
