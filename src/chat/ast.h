#pragma once
// Syntax tree of a parsed template. One generic node shape per layer keeps
// the parser and interpreter small; the meaning of `kids` is per kind.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace flashdraft::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Const,    // value
    Name,     // name
    List,     // kids = items (tuples too)
    Dict,     // kids = key, value, key, value...
    GetAttr,  // kids = [object], name = attribute
    GetItem,  // kids = [object, index]
    Slice,    // kids = [start, stop, step], each may be null
    Call,     // kids = [callee, positional...], kwargs
    Filter,   // kids = [operand, positional...], kwargs, name = filter
    Test,     // kids = [operand, positional...], kwargs, name = test
    Neg,
    Pos,
    Not,      // kids = [operand]
    Binary,   // kids = [left, right], name = + - * / // % **
    And,
    Or,       // kids = [left, right]
    Compare,  // kids = [first, operands...], ops = == != < <= > >= in notin
    Concat,   // kids = items joined with ~
    Cond,     // kids = [then, test, else (may be null)]
  };
  Kind kind;
  int line = 0;
  Json value;
  std::string name;
  std::vector<ExprPtr> kids;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Node;
using Body = std::vector<Node>;

struct Node {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Break, Continue, Passthrough, Macro };
  Kind kind;
  int line = 0;
  std::string text;                  // Text
  ExprPtr expr;                      // Output value, For iterable, Set value
  std::vector<std::string> targets;  // Set / SetBlock / For names (several = tuple unpacking)
  std::string ns_attr;               // Set: assigns targets[0].ns_attr when non-empty
  ExprPtr filter;                    // For: the `if` condition
  std::vector<std::pair<ExprPtr, Body>> branches;  // If / elif
  Body body;                         // For / SetBlock / Passthrough body
  Body else_body;                    // If else / For else
  // Macro: targets[0] is its name, body its body.
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;     // one per param, null when it has none
  bool catches_varargs = false;      // the body reads `varargs` / `kwargs`, so extra arguments land there
  bool catches_kwargs = false;
};

}  // namespace flashdraft::chat
