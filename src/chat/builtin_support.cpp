#include "chat/builtin_support.h"

#include <algorithm>

namespace flashdraft::chat::detail {

const std::set<std::string> kFilters = {
    "length", "count", "tojson", "trim", "string", "first", "last", "default", "d", "join", "upper", "lower",
    "capitalize", "title", "replace", "list", "reverse", "items", "int", "float", "abs", "unique",
    "map", "select", "reject", "selectattr", "rejectattr", "safe", "escape", "e", "sort", "dictsort", "indent",
    "sum", "min", "max", "round"};
const std::set<std::string> kTests = {
    "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "true", "false",
    "mapping", "sequence", "iterable", "callable", "odd", "even", "divisibleby", "eq", "equalto", "==",
    "ne", "!=", "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=", "in", "lower",
    "upper", "sameas"};
const std::set<std::string> kStringMethods = {
    "startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "replace", "upper", "lower",
    "capitalize", "title", "find", "rfind", "count", "join", "splitlines", "isdigit", "isalpha", "isalnum",
    "isspace", "isupper", "islower"};
const std::set<std::string> kDictMethods = {"items", "keys", "values", "get"};
const std::set<std::string> kGlobals = {"namespace", "raise_exception", "range", "dict", "strftime_now"};
const std::set<std::string> kLoopAttributes = {"index", "index0", "revindex", "revindex0", "first", "last",
                                               "length", "previtem", "nextitem", "depth", "depth0", "cycle"};

[[noreturn]] void type_error(const std::string& msg) { throw Error(msg); }

std::string obj_desc(const Value& v) {
  if (v.is_json() && v.json().is_null()) return "None";
  return type_name(v) + " object";
}

int64_t as_int(const Value& v) {
  const Json& j = v.json();
  if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) type_error("integer too large");
    return static_cast<int64_t>(j.get<uint64_t>());
  }
  return j.get<int64_t>();
}

double as_double(const Value& v) {
  const Json& j = v.json();
  return j.is_number_float() ? j.get<double>() : static_cast<double>(as_int(v));
}

Value int_value(__int128 v) {
  if (v > INT64_MAX || v < INT64_MIN) type_error("integer result out of 64-bit range");
  return Value(Json(static_cast<int64_t>(v)));
}

Value child(const Value& parent, const Json& elem) { return parent.is_borrowed() ? Value::borrowed(elem) : Value(elem); }

Json to_json(const Value& v, const char* what) {
  if (v.is_json()) return v.json();
  type_error(std::string("cannot use ") + type_name(v) + " " + what);
}

Params::Params(const std::string& fn, const CallArgs& args, std::initializer_list<const char*> names)
    : values(names.size()) {
  if (args.positional.size() > names.size())
    type_error(fn + "() takes at most " + std::to_string(names.size()) + " arguments (" +
               std::to_string(args.positional.size()) + " given)");
  std::vector<std::string> n(names.begin(), names.end());
  for (size_t i = 0; i < args.positional.size(); ++i) values[i] = args.positional[i], given.insert(i);
  for (const auto& [k, v] : args.keyword) {
    auto it = std::find(n.begin(), n.end(), k);
    if (it == n.end()) type_error(fn + "() got an unexpected keyword argument '" + k + "'");
    const size_t i = static_cast<size_t>(it - n.begin());
    if (given.count(i)) type_error(fn + "() got multiple values for argument '" + k + "'");
    values[i] = v;
    given.insert(i);
  }
}

std::string arg_str(const Value& v, const std::string& fn) {
  if (!is_str(v)) type_error(fn + "() argument must be str, not " + type_name(v));
  return str(v);
}

std::optional<std::string> opt_str(const Params& p, size_t i, const std::string& fn) {
  if (p.none(i)) return std::nullopt;
  return arg_str(p.values[i], fn);
}

long opt_long(const Params& p, size_t i, long fallback, const std::string& fn) {
  if (p.none(i)) return fallback;
  if (!is_int(p.values[i])) type_error(fn + "() argument must be an integer, not " + type_name(p.values[i]));
  return static_cast<long>(as_int(p.values[i]));
}

Value string_list(const std::vector<std::string>& parts) {
  Json arr = Json::array();
  for (const auto& p : parts) arr.push_back(p);
  return Value(std::move(arr));
}

std::vector<size_t> slice_positions(size_t len, const Value& start, const Value& stop, const Value& step) {
  auto bound = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_json() && v.json().is_null()) return std::nullopt;
    if (!is_int(v)) type_error("slice indices must be integers or None, not " + type_name(v));
    return as_int(v);
  };
  const auto st = bound(step);
  const int64_t s = st.value_or(1);
  if (s == 0) type_error("slice step cannot be zero");
  const auto n = static_cast<int64_t>(len);
  const int64_t lower = s > 0 ? 0 : -1, upper = s > 0 ? n : n - 1;
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  const int64_t b = clamp(bound(start), s > 0 ? lower : upper);
  const int64_t e = clamp(bound(stop), s > 0 ? upper : lower);
  std::vector<size_t> out;
  for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out.push_back(static_cast<size_t>(i));
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value same_markup(const Value& src, std::string s) {
  return src.is_markup() ? Value::markup(std::move(s)) : Value(Json(std::move(s)));
}

}  // namespace flashdraft::chat::detail

namespace flashdraft::chat {

using namespace detail;

bool is_supported_filter(const std::string& name) { return kFilters.count(name) > 0; }
bool is_supported_test(const std::string& name) { return kTests.count(name) > 0; }
bool is_supported_method(const std::string& name) {
  return kStringMethods.count(name) || kDictMethods.count(name) || name == "cycle";
}
bool is_supported_global_function(const std::string& name) { return kGlobals.count(name) > 0; }
bool is_supported_loop_attribute(const std::string& name) { return kLoopAttributes.count(name) > 0; }

}  // namespace flashdraft::chat
