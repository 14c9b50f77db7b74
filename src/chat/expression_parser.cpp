#include "chat/expression_parser.h"

#include <cerrno>
#include <cstdlib>

#include "chat/builtins.h"

namespace flashdraft::chat::parsing {

bool ExpressionParser::is_tuple_end(const char* extra_end) const {
  if (cur().kind == K::VarEnd || cur().kind == K::BlockEnd || is_op(")")) return true;
  return extra_end && is_name(extra_end);
}

ExprPtr ExpressionParser::parse_tuple(bool explicit_parens, bool with_condexpr, const char* extra_end) {
  const int line = cur().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (is_tuple_end(extra_end)) break;
    items.push_back(with_condexpr ? parse_expression() : parse_or());
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) fail(cur().line, "expected an expression, got " + describe(cur()));
  }
  auto e = make(Expr::Kind::List, line);
  e->kids = std::move(items);
  return e;
}

ExprPtr ExpressionParser::parse_expression() {
  const int line = cur().line;
  ExprPtr expr = parse_or();
  while (skip_name("if")) {
    auto cond = make(Expr::Kind::Cond, line);
    ExprPtr test = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_expression() : nullptr;
    cond->kids.push_back(std::move(expr));
    cond->kids.push_back(std::move(test));
    cond->kids.push_back(std::move(otherwise));
    expr = std::move(cond);
  }
  return expr;
}

ExprPtr ExpressionParser::binary(Expr::Kind kind, const std::string& name, ExprPtr l, ExprPtr r, int line) {
  auto e = make(kind, line);
  e->name = name;
  e->kids.push_back(std::move(l));
  e->kids.push_back(std::move(r));
  return e;
}

ExprPtr ExpressionParser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    const int line = next().line;
    left = binary(Expr::Kind::Or, "or", std::move(left), parse_and(), line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    const int line = next().line;
    left = binary(Expr::Kind::And, "and", std::move(left), parse_not(), line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_not() {
  if (is_name("not")) {
    auto e = make(Expr::Kind::Not, next().line);
    e->kids.push_back(parse_not());
    return e;
  }
  return parse_compare();
}

ExprPtr ExpressionParser::parse_compare() {
  const int line = cur().line;
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().kind == K::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
      op = next().text;
    } else if (skip_name("in")) {
      op = "in";
    } else if (is_name("not") && peek().kind == K::Name && peek().text == "in") {
      next();
      next();
      op = "notin";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(Expr::Kind::Compare, line);
      cmp->kids.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->kids.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr ExpressionParser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& op = next();
    left = binary(Expr::Kind::Binary, op.text, std::move(left), parse_concat(), op.line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_concat() {
  const int line = cur().line;
  ExprPtr first = parse_math2();
  if (!is_op("~")) return first;
  auto e = make(Expr::Kind::Concat, line);
  e->kids.push_back(std::move(first));
  while (skip_op("~")) e->kids.push_back(parse_math2());
  return e;
}

ExprPtr ExpressionParser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& op = next();
    if (op.text == "%" && left->kind == Expr::Kind::Const && left->value.is_string())
      fail(op.line, "unsupported printf-style string formatting ('%')");
    left = binary(Expr::Kind::Binary, op.text, std::move(left), parse_pow(), op.line);
  }
  return left;
}

ExprPtr ExpressionParser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    const int line = next().line;
    ExprPtr right = parse_unary(true);
    // Jinja2 folds `-N` to a constant and writes it into Python source as `-N ** y`,
    // which Python reads as -(N ** y); both constant, it folds the power correctly.
    const auto is_number = [](const Expr& e) { return e.kind == Expr::Kind::Const && e.value.is_number(); };
    const bool right_const = is_number(*right) || ((right->kind == Expr::Kind::Neg || right->kind == Expr::Kind::Pos) &&
                                                   is_number(*right->kids[0]));
    if (left->kind == Expr::Kind::Neg && is_number(*left->kids[0]) && !right_const) {
      auto neg = make(Expr::Kind::Neg, left->line);
      neg->kids.push_back(binary(Expr::Kind::Binary, "**", std::move(left->kids[0]), std::move(right), line));
      left = std::move(neg);
    } else {
      left = binary(Expr::Kind::Binary, "**", std::move(left), std::move(right), line);
    }
  }
  return left;
}

ExprPtr ExpressionParser::parse_unary(bool with_filter) {
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    const Token& op = next();
    node = make(op.text == "-" ? Expr::Kind::Neg : Expr::Kind::Pos, op.line);
    node->kids.push_back(parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr ExpressionParser::parse_primary() {
  const Token& t = cur();
  const int line = t.line;
  if (t.kind == K::Name) {
    next();
    auto e = make(Expr::Kind::Const, line);
    if (t.text == "true" || t.text == "True") e->value = true;
    else if (t.text == "false" || t.text == "False") e->value = false;
    else if (t.text == "none" || t.text == "None") e->value = nullptr;
    else {
      e->kind = Expr::Kind::Name;
      e->name = t.text;
      if (!macro_reads_.empty()) macro_reads_.back().insert(t.text);
    }
    return e;
  }
  if (t.kind == K::String) {
    std::string s;
    while (cur().kind == K::String) s += next().text;  // adjacent literals concatenate
    auto e = make(Expr::Kind::Const, line);
    e->value = s;
    return e;
  }
  if (t.kind == K::Integer || t.kind == K::Float) {
    next();
    auto e = make(Expr::Kind::Const, line);
    errno = 0;
    if (t.kind == K::Integer) {
      const long long v = std::strtoll(t.text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(line, "integer literal " + t.text + " is too large");
      e->value = static_cast<int64_t>(v);
    } else {
      e->value = std::strtod(t.text.c_str(), nullptr);
    }
    return e;
  }
  if (is_op("(")) {
    next();
    ExprPtr e = parse_tuple(true);
    expect_op(")");
    return e;
  }
  if (is_op("[")) {
    next();
    auto e = make(Expr::Kind::List, line);
    while (!is_op("]")) {
      if (!e->kids.empty()) expect_op(",");
      if (is_op("]")) break;
      e->kids.push_back(parse_expression());
    }
    expect_op("]");
    return e;
  }
  if (is_op("{")) {
    next();
    auto e = make(Expr::Kind::Dict, line);
    while (!is_op("}")) {
      if (!e->kids.empty()) expect_op(",");
      if (is_op("}")) break;
      e->kids.push_back(parse_expression());
      expect_op(":");
      e->kids.push_back(parse_expression());
    }
    expect_op("}");
    return e;
  }
  fail(line, "unexpected " + describe(t));
}

ExprPtr ExpressionParser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr ExpressionParser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      node = parse_filter(std::move(node));
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr ExpressionParser::parse_subscript(ExprPtr node) {
  const Token& t = next();
  if (t.text == ".") {
    const Token& attr = next();
    if (attr.kind == K::Name) {
      if (node->kind == Expr::Kind::Name && node->name == "loop" && loop_depth_ > 0 &&
          !is_supported_loop_attribute(attr.text))
        fail(attr.line, "unsupported loop attribute 'loop." + attr.text + "'");
      auto e = make(Expr::Kind::GetAttr, t.line);
      e->name = attr.text;
      e->kids.push_back(std::move(node));
      return e;
    }
    if (attr.kind != K::Integer) fail(attr.line, "expected a name or number after '.'");
    auto index = make(Expr::Kind::Const, attr.line);
    index->value = static_cast<int64_t>(std::strtoll(attr.text.c_str(), nullptr, 10));
    auto e = make(Expr::Kind::GetItem, t.line);
    e->kids.push_back(std::move(node));
    e->kids.push_back(std::move(index));
    return e;
  }
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  if (args.size() != 1) fail(t.line, "unsupported tuple subscript");
  auto e = make(Expr::Kind::GetItem, t.line);
  e->kids.push_back(std::move(node));
  e->kids.push_back(std::move(args[0]));
  return e;
}

ExprPtr ExpressionParser::parse_subscribed() {
  const int line = cur().line;
  ExprPtr start;
  if (!is_op(":")) {
    ExprPtr e = parse_expression();
    if (!is_op(":")) return e;
    start = std::move(e);
  }
  next();  // ':'
  ExprPtr stop, step;
  if (!is_op(":") && !is_op("]") && !is_op(",")) stop = parse_expression();
  if (skip_op(":")) {
    if (!is_op("]") && !is_op(",")) step = parse_expression();
  }
  auto s = make(Expr::Kind::Slice, line);
  s->kids.push_back(std::move(start));
  s->kids.push_back(std::move(stop));
  s->kids.push_back(std::move(step));
  return s;
}

void ExpressionParser::parse_call_args(Expr& e) {
  const int line = cur().line;
  expect_op("(");
  bool need_comma = false;
  while (!is_op(")")) {
    if (need_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (is_op("*") || is_op("**")) fail(cur().line, "unsupported '*args' / '**kwargs' in a call");
    if (cur().kind == K::Name && peek().kind == K::Op && peek().text == "=") {
      std::string key = next().text;
      next();
      e.kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      if (!e.kwargs.empty()) fail(line, "positional argument after keyword argument");
      e.kids.push_back(parse_expression());
    }
    need_comma = true;
  }
  expect_op(")");
}

ExprPtr ExpressionParser::parse_call(ExprPtr callee) {
  const int line = cur().line;
  if (callee->kind == Expr::Kind::GetAttr) {
    if (!is_supported_method(callee->name)) fail(line, "unsupported method '" + callee->name + "'");
  } else if (callee->kind == Expr::Kind::Name) {
    if (!is_supported_global_function(callee->name)) called_names_.emplace_back(callee->name, line);
  } else {
    fail(line, "unsupported call of a computed value");
  }
  auto e = make(Expr::Kind::Call, line);
  e->kids.push_back(std::move(callee));
  parse_call_args(*e);
  return e;
}

ExprPtr ExpressionParser::parse_filter(ExprPtr node) {
  while (skip_op("|")) {
    const int line = cur().line;
    std::string name = expect_name();
    while (skip_op(".")) name.append(".").append(expect_name());
    if (!is_supported_filter(name)) fail(line, "unsupported filter '" + name + "'");
    auto e = make(Expr::Kind::Filter, line);
    e->name = name;
    e->kids.push_back(std::move(node));
    if (is_op("(")) parse_call_args(*e);
    node = std::move(e);
  }
  return node;
}

ExprPtr ExpressionParser::parse_test(ExprPtr node) {
  const int line = next().line;  // 'is'
  const bool negated = skip_name("not");
  std::string name = expect_name();
  while (skip_op(".")) name.append(".").append(expect_name());
  if (!is_supported_test(name)) fail(line, "unsupported test '" + name + "'");
  auto e = make(Expr::Kind::Test, line);
  e->name = name;
  e->kids.push_back(std::move(node));
  if (is_op("(")) {
    parse_call_args(*e);
  } else if ((cur().kind == K::Name || cur().kind == K::String || cur().kind == K::Integer ||
              cur().kind == K::Float || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) fail(cur().line, "tests cannot be chained with 'is'");
    e->kids.push_back(parse_postfix(parse_primary()));
  }
  if (!negated) return e;
  auto n = make(Expr::Kind::Not, line);
  n->kids.push_back(std::move(e));
  return n;
}

}  // namespace flashdraft::chat::parsing
