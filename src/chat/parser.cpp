#include "chat/parser.h"

#include <initializer_list>

#include "chat/builtins.h"
#include "chat/expression_parser.h"

namespace flashdraft::chat {
namespace {

using parsing::K;

Node make_node(Node::Kind kind) {
  Node n;
  n.kind = kind;
  return n;
}

// Statements: text, {{ }}, and the {% %} tags; expressions come from ExpressionParser.
class Parser : parsing::ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  Body parse_root() {
    Body body = parse_statements({});
    if (cur().kind != K::End) fail(cur().line, "unexpected '{% " + cur().text + " %}'");
    // Calls may precede the macro definition in the text, so names are checked at the end.
    for (const auto& [name, line] : called_names_)
      if (!macro_names_.count(name)) fail(line, "unsupported function '" + name + "'");
    return body;
  }


 private:
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
};

}  // namespace

Body parse_template(const std::string& source) { return Parser(tokenize(source)).parse_root(); }

}  // namespace flashdraft::chat
