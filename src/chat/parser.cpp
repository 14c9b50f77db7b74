#include "chat/parser.h"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <set>

#include "chat/builtins.h"
#include "chat/lexer.h"
#include "core/error.h"

namespace flashdraft::chat {
namespace {

using K = Token::Kind;

ExprPtr make(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

Node make_node(Node::Kind kind) {
  Node n;
  n.kind = kind;
  return n;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Body parse_root() {
    Body body = parse_statements({});
    if (cur().kind != K::End) fail(cur().line, "unexpected '{% " + cur().text + " %}'");
    // Calls may precede the macro definition in the text, so names are checked at the end.
    for (const auto& [name, line] : called_names_)
      if (!macro_names_.count(name)) fail(line, "unsupported function '" + name + "'");
    return body;
  }

 private:
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

  // --- statements -----------------------------------------------------------

  // Parses until a `{% name %}` with name in `ends`, leaving the stream on that name.
  Body parse_statements(std::initializer_list<const char*> ends) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == K::End) return body;
      if (t.kind == K::Data) {
        Node n = make_node(Node::Kind::Text);
        n.line = t.line;
        n.text = t.text;
        body.push_back(std::move(n));
        next();
      } else if (t.kind == K::VarBegin) {
        next();
        Node n = make_node(Node::Kind::Output);
        n.line = t.line;
        n.expr = parse_tuple();
        if (cur().kind != K::VarEnd) fail(cur().line, "expected '}}', got " + describe(cur()));
        next();
        body.push_back(std::move(n));
      } else if (t.kind == K::BlockBegin) {
        const Token& name = peek();
        if (name.kind != K::Name) fail(name.line, "expected a tag name after '{%', got " + describe(name));
        for (const char* end : ends)
          if (name.text == end) {
            next();
            return body;
          }
        next();
        body.push_back(parse_statement());
      } else {
        fail(t.line, "unexpected " + describe(t));
      }
    }
  }

  // Parses the body up to one of `ends`; fails naming the opening tag if the template ends first.
  Body parse_block_body(std::initializer_list<const char*> ends, const std::string& tag, int open_line) {
    Body body = parse_statements(ends);
    if (cur().kind == K::End)
      fail(open_line, "'" + tag + "' opened here is never closed (expected '{% end" + tag + " %}')");
    return body;
  }

  Node parse_statement() {
    const Token& tag = next();
    const int line = tag.line;
    const std::string name = tag.text;
    if (name == "if") return parse_if(line);
    if (name == "for") return parse_for(line);
    if (name == "set") return parse_set(line);
    if (name == "print") {
      Node n = make_node(Node::Kind::Output);
      n.line = line;
      n.expr = parse_tuple();
      expect_block_end(name);
      return n;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail(line, "'" + name + "' outside of a for loop");
      expect_block_end(name);
      Node n = make_node(name == "break" ? Node::Kind::Break : Node::Kind::Continue);
      n.line = line;
      return n;
    }
    if (name == "macro") return parse_macro(line);
    if (name == "generation") {
      // transformers' {% generation %} marks assistant text for masks; it renders its body unchanged.
      expect_block_end(name);
      Node n = make_node(Node::Kind::Passthrough);
      n.line = line;
      n.body = parse_block_body({"endgeneration"}, "generation", line);
      next();
      expect_block_end("endgeneration");
      return n;
    }
    static const char* const closers[] = {"endif", "endfor", "endset", "else", "elif", "endgeneration", "endmacro"};
    for (const char* c : closers)
      if (name == c) fail(line, "unexpected '{% " + name + " %}'");
    fail(line, "unsupported tag '" + name + "'");
  }

  Node parse_if(int line) {
    Node n = make_node(Node::Kind::If);
    n.line = line;
    while (true) {
      ExprPtr test = parse_tuple(false, false);
      expect_block_end("if");
      Body body = parse_block_body({"elif", "else", "endif"}, "if", line);
      n.branches.emplace_back(std::move(test), std::move(body));
      const std::string which = next().text;
      if (which == "elif") continue;
      if (which == "else") {
        expect_block_end("else");
        n.else_body = parse_block_body({"endif"}, "if", line);
        next();
      }
      expect_block_end("endif");
      return n;
    }
  }

  Node parse_for(int line) {
    Node n = make_node(Node::Kind::For);
    n.line = line;
    while (true) {
      n.targets.push_back(expect_name());
      if (!skip_op(",")) break;
      if (is_name("in")) break;
    }
    if (!skip_name("in")) fail(cur().line, "expected 'in' in for loop, got " + describe(cur()));
    n.expr = parse_tuple(false, false, "recursive");
    if (skip_name("if")) n.filter = parse_expression();
    if (is_name("recursive")) fail(cur().line, "unsupported recursive for loop");
    expect_block_end("for");
    ++loop_depth_;
    n.body = parse_block_body({"endfor", "else"}, "for", line);
    --loop_depth_;
    if (next().text == "else") {
      expect_block_end("else");
      n.else_body = parse_block_body({"endfor"}, "for", line);
      next();
    }
    expect_block_end("endfor");
    return n;
  }

  Node parse_macro(int line) {
    Node n = make_node(Node::Kind::Macro);
    n.line = line;
    n.targets.push_back(expect_name());
    expect_op("(");
    while (!is_op(")")) {
      if (!n.params.empty()) expect_op(",");
      if (is_op(")")) break;
      n.params.push_back(expect_name());
      n.defaults.push_back(skip_op("=") ? parse_expression() : nullptr);
      if (!n.defaults.back() && n.defaults.size() > 1 && n.defaults[n.defaults.size() - 2])
        fail(line, "non-default argument follows default argument in macro '" + n.targets[0] + "'");
    }
    expect_op(")");
    expect_block_end("macro");
    macro_names_.insert(n.targets[0]);
    macro_reads_.emplace_back();
    const int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;  // break/continue cannot cross a macro boundary
    n.body = parse_block_body({"endmacro"}, "macro", line);
    loop_depth_ = saved_loop_depth;
    n.catches_varargs = macro_reads_.back().count("varargs") > 0;
    n.catches_kwargs = macro_reads_.back().count("kwargs") > 0;
    macro_reads_.pop_back();
    next();
    expect_block_end("endmacro");
    return n;
  }

  Node parse_set(int line) {
    Node n = make_node(Node::Kind::Set);
    n.line = line;
    n.targets.push_back(expect_name());
    if (skip_op(".")) {
      n.ns_attr = expect_name();
    } else {
      while (skip_op(",")) {
        if (is_op("=")) break;
        n.targets.push_back(expect_name());
      }
    }
    if (skip_op("=")) {
      n.expr = parse_tuple();
      expect_block_end("set");
      return n;
    }
    if (!n.ns_attr.empty() || n.targets.size() != 1) fail(line, "a '{% set %}' block assigns one plain name");
    if (is_op("|")) fail(line, "unsupported filter on a '{% set %}' block");
    expect_block_end("set");
    n.kind = Node::Kind::SetBlock;
    n.body = parse_block_body({"endset"}, "set", line);
    next();
    expect_block_end("endset");
    return n;
  }

  // --- expressions (Jinja2's precedence, lowest first) ---------------------

  bool is_tuple_end(const char* extra_end) const {
    if (cur().kind == K::VarEnd || cur().kind == K::BlockEnd || is_op(")")) return true;
    return extra_end && is_name(extra_end);
  }

  ExprPtr parse_tuple(bool explicit_parens = false, bool with_condexpr = true, const char* extra_end = nullptr) {
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

  ExprPtr parse_expression() {
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

  ExprPtr binary(Expr::Kind kind, const std::string& name, ExprPtr l, ExprPtr r, int line) {
    auto e = make(kind, line);
    e->name = name;
    e->kids.push_back(std::move(l));
    e->kids.push_back(std::move(r));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = next().line;
      left = binary(Expr::Kind::Or, "or", std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = next().line;
      left = binary(Expr::Kind::And, "and", std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      auto e = make(Expr::Kind::Not, next().line);
      e->kids.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
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

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& op = next();
      left = binary(Expr::Kind::Binary, op.text, std::move(left), parse_concat(), op.line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make(Expr::Kind::Concat, line);
    e->kids.push_back(std::move(first));
    while (skip_op("~")) e->kids.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& op = next();
      if (op.text == "%" && left->kind == Expr::Kind::Const && left->value.is_string())
        fail(op.line, "unsupported printf-style string formatting ('%')");
      left = binary(Expr::Kind::Binary, op.text, std::move(left), parse_pow(), op.line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = next().line;
      left = binary(Expr::Kind::Binary, "**", std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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

  ExprPtr parse_postfix(ExprPtr node) {
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

  ExprPtr parse_filter_expr(ExprPtr node) {
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

  ExprPtr parse_subscript(ExprPtr node) {
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

  ExprPtr parse_subscribed() {
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

  void parse_call_args(Expr& e) {
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

  ExprPtr parse_call(ExprPtr callee) {
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

  ExprPtr parse_filter(ExprPtr node) {
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

  ExprPtr parse_test(ExprPtr node) {
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

  std::vector<Token> t_;
  size_t i_ = 0;
  int loop_depth_ = 0;
  std::set<std::string> macro_names_;
  std::vector<std::pair<std::string, int>> called_names_;  // calls of names that are not builtins
  std::vector<std::set<std::string>> macro_reads_;         // names read in each macro being parsed
};

}  // namespace

Body parse_template(const std::string& source) { return Parser(tokenize(source)).parse_root(); }

}  // namespace flashdraft::chat
