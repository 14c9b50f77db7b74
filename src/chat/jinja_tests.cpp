// Jinja2 tests (`x is defined`, `x is string`, ...).
#include "chat/builtin_support.h"

#include "chat/py_str.h"

namespace flashdraft::chat {

using namespace detail;

bool apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  auto one_arg = [&]() -> const Value& {
    if (args.positional.size() != 1 || !args.keyword.empty()) type_error("test '" + name + "' takes one argument");
    return args.positional[0];
  };
  static const std::set<std::string> kWithArgument = {"divisibleby", "eq", "equalto", "==", "ne", "!=", "lt",
                                                      "lessthan", "<", "le", "<=", "gt", "greaterthan", ">",
                                                      "ge", ">=", "in", "sameas"};
  if (!kWithArgument.count(name) && (!args.positional.empty() || !args.keyword.empty()))
    type_error("test '" + name + "' takes no arguments");
  const bool json = v.is_json();
  const Json::value_t t = json ? v.json().type() : Json::value_t::discarded;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return json && v.json().is_null();
  if (name == "string") return is_str(v);
  if (name == "number") return is_num(v);
  if (name == "integer") return json && v.json().is_number_integer();
  if (name == "float") return t == Json::value_t::number_float;
  if (name == "boolean") return t == Json::value_t::boolean;
  if (name == "true") return t == Json::value_t::boolean && v.json().get<bool>();
  if (name == "false") return t == Json::value_t::boolean && !v.json().get<bool>();
  if (name == "mapping") return is_dict(v);
  // Jinja: anything with len() and __getitem__; Undefined has both.
  if (name == "sequence") return v.is_undefined() || is_str(v) || is_list(v) || is_dict(v);
  if (name == "iterable") return v.is_undefined() || is_str(v) || is_list(v) || is_dict(v);
  if (name == "callable") return v.is_undefined() || v.kind() == Value::Kind::Function || v.kind() == Value::Kind::Loop;
  if (name == "odd" || name == "even" || name == "divisibleby") {
    const Value divisor = name == "divisibleby" ? one_arg() : Value(Json(2));
    const Value rem = binary_op("%", v, divisor);
    const bool zero = !truthy(rem);
    return name == "odd" ? !zero : zero;
  }
  if (name == "eq" || name == "equalto" || name == "==") return py_equal(v, one_arg());
  if (name == "ne" || name == "!=") return !py_equal(v, one_arg());
  if (name == "lt" || name == "lessthan" || name == "<") return compare("<", v, one_arg());
  if (name == "le" || name == "<=") return compare("<=", v, one_arg());
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(">", v, one_arg());
  if (name == "ge" || name == ">=") return compare(">=", v, one_arg());
  if (name == "in") return contains(one_arg(), v);
  if (name == "lower" || name == "upper") {
    const std::string s = to_str(v);
    return name == "lower" ? s == py::lower(s) && s != py::upper(s) : s == py::upper(s) && s != py::lower(s);
  }
  if (name == "sameas") {
    // Python identity; only the singletons None/True/False can be compared meaningfully.
    const Value& o = one_arg();
    if (!json || !o.is_json()) return false;
    const Json &a = v.json(), &b = o.json();
    if (a.is_null() || b.is_null()) return a.is_null() && b.is_null();
    if (a.is_boolean() && b.is_boolean()) return a == b;
    return false;
  }
  type_error("unsupported test '" + name + "'");
}

}  // namespace flashdraft::chat
