#include "chat/builtins.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "chat/py_json.h"
#include "chat/py_str.h"

namespace flashdraft::chat {
namespace {

const std::set<std::string> kFilters = {
    "length", "count", "tojson", "trim", "string", "first", "last", "default", "d", "join", "upper", "lower",
    "capitalize", "title", "replace", "list", "reverse", "items", "int", "float", "abs", "unique",
    "map", "select", "reject", "selectattr", "rejectattr", "safe", "escape", "e"};
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

bool is_str(const Value& v) { return v.is_json() && v.json().is_string(); }
bool is_list(const Value& v) { return v.is_json() && v.json().is_array(); }
bool is_dict(const Value& v) { return v.is_json() && v.json().is_object(); }
bool is_int(const Value& v) { return v.is_json() && (v.json().is_number_integer() || v.json().is_boolean()); }
bool is_num(const Value& v) { return v.is_json() && (v.json().is_number() || v.json().is_boolean()); }
const std::string& str(const Value& v) { return v.json().get_ref<const std::string&>(); }

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

// An element of a container keeps borrowing from the render context if the container did.
Value child(const Value& parent, const Json& elem) { return parent.is_borrowed() ? Value::borrowed(elem) : Value(elem); }

Json to_json(const Value& v, const char* what) {
  if (v.is_json()) return v.json();
  type_error(std::string("cannot use ") + type_name(v) + " " + what);
}

// Binds call arguments to parameter names like Python does for simple signatures.
struct Params {
  Params(const std::string& fn, const CallArgs& args, std::initializer_list<const char*> names) : values(names.size()) {
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
  bool has(size_t i) const { return given.count(i) > 0; }
  // An argument that is absent or None.
  bool none(size_t i) const { return !has(i) || (values[i].is_json() && values[i].json().is_null()); }
  std::vector<Value> values;
  std::set<size_t> given;
};

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

// Python's slice.indices() followed by the walk it describes.
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

// markupsafe.escape.
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

// Markup's str methods and Jinja's trim/upper/lower/capitalize keep a string marked safe.
Value same_markup(const Value& src, std::string s) {
  return src.is_markup() ? Value::markup(std::move(s)) : Value(Json(std::move(s)));
}

Value dumps(const Value& v, const CallArgs& args) {
  Params p("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  py::DumpsOptions o;
  o.ensure_ascii = p.has(0) && truthy(p.values[0]);
  if (!p.none(1)) {
    const Value& ind = p.values[1];
    if (is_str(ind)) o.indent = str(ind);
    else if (is_int(ind)) o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, as_int(ind))), ' ');
    else type_error("tojson indent must be an int or a string");
  }
  if (!p.none(2)) {
    const Value& sep = p.values[2];
    if (!is_list(sep) || sep.json().size() != 2 || !sep.json()[0].is_string() || !sep.json()[1].is_string())
      type_error("tojson separators must be a pair of strings");
    o.item_separator = sep.json()[0].get<std::string>();
    o.key_separator = sep.json()[1].get<std::string>();
  }
  o.sort_keys = p.has(3) && truthy(p.values[3]);
  if (!v.is_json()) type_error("Object of type " + type_name(v) + " is not JSON serializable");
  return Value(Json(py::json_dumps(v.json(), o)));
}

Value attribute_of(const Value& item, const std::string& path) {
  // Jinja's make_attrgetter: dotted path, integer parts index lists.
  Value cur = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = numeric ? get_item(cur, Value(Json(std::stoll(part)))) : get_item(cur, Value(Json(part)));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// select/reject/selectattr/rejectattr share Jinja's select_or_reject.
Value select_or_reject(const std::string& fn, const Value& seq, const CallArgs& args, bool by_attr, bool keep) {
  size_t i = 0;
  std::string attr;
  if (by_attr) {
    if (args.positional.empty() || !is_str(args.positional[0])) type_error(fn + "() needs an attribute name");
    attr = str(args.positional[0]);
    i = 1;
  }
  std::string test;
  CallArgs test_args;
  if (i < args.positional.size()) {
    if (!is_str(args.positional[i])) type_error(fn + "() test name must be a string");
    test = str(args.positional[i]);
    if (!is_supported_test(test)) type_error("unsupported test '" + test + "'");
    test_args.positional.assign(args.positional.begin() + static_cast<long>(i) + 1, args.positional.end());
  }
  Json out = Json::array();
  for (const Value& item : iterate(seq)) {
    const Value probe = by_attr ? attribute_of(item, attr) : item;
    const bool ok = test.empty() ? truthy(probe) : apply_test(test, probe, test_args);
    if (ok == keep) out.push_back(to_json(item, "in a list"));
  }
  return Value(std::move(out));
}

Value map_filter(const Value& seq, const CallArgs& args) {
  Json out = Json::array();
  std::string attr;
  std::optional<Value> dflt;
  for (const auto& [k, v] : args.keyword) {
    if (k == "attribute" && is_str(v)) attr = str(v);
    else if (k == "default") dflt = v;
    else type_error("map() got an unexpected keyword argument '" + k + "'");
  }
  if (!attr.empty()) {
    for (const Value& item : iterate(seq)) {
      Value r = attribute_of(item, attr);
      if (r.is_undefined() && dflt) r = *dflt;
      out.push_back(to_json(r, "in a list"));
    }
    return Value(std::move(out));
  }
  if (args.positional.empty() || !is_str(args.positional[0])) type_error("map() needs a filter name or attribute=");
  const std::string filter = str(args.positional[0]);
  if (!is_supported_filter(filter)) type_error("unsupported filter '" + filter + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  for (const Value& item : iterate(seq)) out.push_back(to_json(apply_filter(filter, item, rest), "in a list"));
  return Value(std::move(out));
}

// Jinja's own title filter: capitalise after runs of '-', whitespace and opening brackets.
std::string jinja_title(const std::string& s) {
  const std::u32string u = py::decode_utf8(s);
  auto is_delim = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c); };
  std::string out;
  size_t i = 0;
  while (i < u.size()) {
    size_t j = i;
    const bool delim = is_delim(u[i]);
    while (j < u.size() && is_delim(u[j]) == delim) ++j;
    const std::string item = py::encode_utf8(std::u32string_view(u).substr(i, j - i));
    if (delim) {
      out += item;
    } else {
      const std::u32string w = py::decode_utf8(item);
      out += py::upper(py::encode_utf8(w.substr(0, 1))) + py::lower(py::encode_utf8(w.substr(1)));
    }
    i = j;
  }
  return out;
}

std::optional<int64_t> parse_python_int(std::string s) {
  s = py::strip(s, std::nullopt, true, true);
  std::string digits;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) digits += s[i++];
  if (i == s.size()) return std::nullopt;
  for (; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) digits += s[i];
    else if (s[i] == '_' && i > 0 && std::isdigit(static_cast<unsigned char>(s[i - 1])) && i + 1 < s.size() &&
             std::isdigit(static_cast<unsigned char>(s[i + 1]))) continue;
    else return std::nullopt;
  }
  errno = 0;
  const long long v = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return v;
}

std::optional<double> parse_python_float(const std::string& s) {
  const std::string t = py::strip(s, std::nullopt, true, true);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return d;
}

bool str_predicate(const std::string& s, const std::string& name) {
  const std::u32string u = py::decode_utf8(s);
  if (u.empty()) return false;
  auto all = [&](auto f) { return std::all_of(u.begin(), u.end(), f); };
  if (name == "isspace") return all([](char32_t c) { return py::is_space(c); });
  if (name == "isdigit") return all([](char32_t c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") return all([](char32_t c) { return c < 0x80 ? std::isalpha(static_cast<int>(c)) != 0 : py::upper(py::encode_utf8(std::u32string(1, c))) != py::lower(py::encode_utf8(std::u32string(1, c))); });
  if (name == "isalnum") return all([](char32_t c) { return c < 0x80 && std::isalnum(static_cast<int>(c)); });
  // isupper / islower: at least one cased character and none of the other case.
  bool cased = false;
  for (char32_t c : u) {
    const std::string one = py::encode_utf8(std::u32string(1, c));
    const bool up = py::lower(one) != one, low = py::upper(one) != one;
    if (name == "isupper" ? low : up) return false;
    cased = cased || (name == "isupper" ? up : low);
  }
  return cased;
}

Value string_method(const Value& self, const std::string& name, const CallArgs& args) {
  const std::string& s = str(self);
  if (name == "startswith" || name == "endswith") {
    Params p(name, args, {"prefix", "start", "end"});
    if (!p.has(0)) type_error(name + "() takes at least 1 argument (0 given)");
    const std::u32string u = py::decode_utf8(s);
    const auto pos = slice_positions(u.size(), p.has(1) ? p.values[1] : Value(Json(nullptr)),
                                     p.has(2) ? p.values[2] : Value(Json(nullptr)), Value(Json(1)));
    std::u32string sub;
    for (size_t i : pos) sub += u[i];
    const std::string hay = py::encode_utf8(sub);
    std::vector<std::string> needles;
    if (is_list(p.values[0])) {
      for (const auto& e : p.values[0].json()) {
        if (!e.is_string()) type_error("tuple for " + name + " must only contain str");
        needles.push_back(e.get<std::string>());
      }
    } else {
      needles.push_back(arg_str(p.values[0], name));
    }
    for (const auto& n : needles) {
      if (n.size() > hay.size()) continue;
      if (name == "startswith" ? hay.compare(0, n.size(), n) == 0 : hay.compare(hay.size() - n.size(), n.size(), n) == 0)
        return Value(Json(true));
    }
    return Value(Json(false));
  }
  if (name == "split" || name == "rsplit") {
    Params p(name, args, {"sep", "maxsplit"});
    const auto sep = opt_str(p, 0, name);
    const long maxsplit = opt_long(p, 1, -1, name);
    return string_list(name == "split" ? py::split(s, sep, maxsplit) : py::rsplit(s, sep, maxsplit));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Params p(name, args, {"chars"});
    return same_markup(self, py::strip(s, opt_str(p, 0, name), name != "rstrip", name != "lstrip"));
  }
  if (name == "replace") {
    Params p(name, args, {"old", "new", "count"});
    if (!p.has(1)) type_error("replace() takes at least 2 arguments");
    return same_markup(self, py::replace(s, arg_str(p.values[0], name), arg_str(p.values[1], name), opt_long(p, 2, -1, name)));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    Params p(name, args, {});
    if (name == "upper") return same_markup(self, py::upper(s));
    if (name == "lower") return same_markup(self, py::lower(s));
    if (name == "capitalize") return same_markup(self, py::capitalize(s));
    return same_markup(self, py::title(s));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    Params p(name, args, {"sub"});
    if (!p.has(0)) type_error(name + "() takes at least 1 argument (0 given)");
    const std::string sub = arg_str(p.values[0], name);
    if (name == "count") return Value(Json(static_cast<int64_t>(py::count(s, sub))));
    return Value(Json(static_cast<int64_t>(py::find(s, sub, name == "rfind"))));
  }
  if (name == "join") {
    Params p(name, args, {"iterable"});
    if (!p.has(0)) type_error("join() takes exactly one argument (0 given)");
    std::string out;
    size_t i = 0;
    for (const Value& item : iterate(p.values[0])) {
      if (!is_str(item))
        type_error("sequence item " + std::to_string(i) + ": expected str instance, " + type_name(item) + " found");
      if (i++) out += s;
      out += str(item);
    }
    return Value(Json(out));
  }
  if (name == "splitlines") {
    Params p(name, args, {"keepends"});
    const bool keep = p.has(0) && truthy(p.values[0]);
    const std::u32string u = py::decode_utf8(s);
    std::vector<std::string> lines;
    size_t b = 0;
    for (size_t i = 0; i < u.size(); ++i) {
      const char32_t c = u[i];
      const bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                       c == 0x85 || c == 0x2028 || c == 0x2029;
      if (!brk) continue;
      size_t end = i + 1;
      if (c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') end = i + 2;
      lines.push_back(py::encode_utf8(std::u32string_view(u).substr(b, (keep ? end : i) - b)));
      b = end;
      i = end - 1;
    }
    if (b < u.size()) lines.push_back(py::encode_utf8(std::u32string_view(u).substr(b)));
    return string_list(lines);
  }
  Params p(name, args, {});
  return Value(Json(str_predicate(s, name)));
}

Value dict_method(const Value& self, const std::string& name, const CallArgs& args) {
  const Json& d = self.json();
  if (name == "get") {
    Params p(name, args, {"key", "default"});
    if (!p.has(0)) type_error("get expected at least 1 argument, got 0");
    if (is_str(p.values[0])) {
      auto it = d.find(str(p.values[0]));
      if (it != d.end()) return child(self, *it);
    }
    return p.has(1) ? p.values[1] : Value(Json(nullptr));
  }
  Params p(name, args, {});
  Json out = Json::array();
  for (auto it = d.begin(); it != d.end(); ++it) {
    if (name == "keys") out.push_back(it.key());
    else if (name == "values") out.push_back(it.value());
    else out.push_back(Json::array({it.key(), it.value()}));
  }
  return Value(std::move(out));
}

}  // namespace

bool is_supported_filter(const std::string& name) { return kFilters.count(name) > 0; }
bool is_supported_test(const std::string& name) { return kTests.count(name) > 0; }
bool is_supported_method(const std::string& name) {
  return kStringMethods.count(name) || kDictMethods.count(name) || name == "cycle";
}
bool is_supported_global_function(const std::string& name) { return kGlobals.count(name) > 0; }
bool is_supported_loop_attribute(const std::string& name) { return kLoopAttributes.count(name) > 0; }

void fail_undefined(const Value& v) {
  throw Error(v.undefined_hint().empty() ? std::string("value is undefined") : v.undefined_hint());
}

std::vector<Value> iterate(const Value& v) {
  std::vector<Value> out;
  switch (v.kind()) {
    case Value::Kind::Undefined: return out;
    case Value::Kind::Json: break;
    default: type_error("'" + type_name(v) + "' object is not iterable");
  }
  const Json& j = v.json();
  if (j.is_array()) {
    out.reserve(j.size());
    for (const auto& e : j) out.push_back(child(v, e));
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) out.emplace_back(Json(it.key()));
  } else if (j.is_string()) {
    for (char32_t cp : py::decode_utf8(str(v))) out.emplace_back(Json(py::encode_utf8(std::u32string(1, cp))));
  } else {
    type_error("'" + type_name(v) + "' object is not iterable");
  }
  return out;
}

size_t length(const Value& v) {
  if (v.is_undefined()) return 0;
  if (v.is_json()) {
    const Json& j = v.json();
    if (j.is_string()) return py::code_point_count(str(v));
    if (j.is_array() || j.is_object()) return j.size();
  }
  if (v.kind() == Value::Kind::Loop) return v.loop().items->size();
  type_error("object of type '" + type_name(v) + "' has no len()");
}

Value get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::Undefined: fail_undefined(obj);
    case Value::Kind::Namespace: {
      const Value* found = obj.ns().find(name);
      return found ? *found : Value::undefined("'Namespace object' has no attribute '" + name + "'");
    }
    case Value::Kind::Loop: {
      const LoopObject& l = obj.loop();
      const auto n = static_cast<int64_t>(l.items->size());
      const auto i = static_cast<int64_t>(l.index0);
      if (name == "index") return Value(Json(i + 1));
      if (name == "index0") return Value(Json(i));
      if (name == "revindex") return Value(Json(n - i));
      if (name == "revindex0") return Value(Json(n - i - 1));
      if (name == "first") return Value(Json(i == 0));
      if (name == "last") return Value(Json(i == n - 1));
      if (name == "length") return Value(Json(n));
      if (name == "depth") return Value(Json(1));
      if (name == "depth0") return Value(Json(0));
      if (name == "previtem") return i > 0 ? (*l.items)[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item");
      if (name == "nextitem") return i + 1 < n ? (*l.items)[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item");
      if (name == "cycle") return Value::function("cycle", std::make_shared<Value>(obj));
      return Value::undefined("'LoopContext object' has no attribute '" + name + "'");
    }
    case Value::Kind::Function: return Value::undefined("'function object' has no attribute '" + name + "'");
    case Value::Kind::Json: break;
  }
  const Json& j = obj.json();
  if (j.is_object()) {
    if (kDictMethods.count(name)) return Value::function(name, std::make_shared<Value>(obj));
    auto it = j.find(name);
    if (it != j.end()) return child(obj, *it);
  } else if (j.is_string() && kStringMethods.count(name)) {
    return Value::function(name, std::make_shared<Value>(obj));
  }
  return Value::undefined(std::string("'").append(obj_desc(obj)) + "' has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_json()) {
    const Json& j = obj.json();
    if (j.is_object() && is_str(key)) {
      auto it = j.find(str(key));
      if (it != j.end()) return child(obj, *it);
    } else if ((j.is_array() || j.is_string()) && is_int(key)) {
      const int64_t raw = as_int(key);
      if (j.is_array()) {
        const int64_t i = raw < 0 ? raw + static_cast<int64_t>(j.size()) : raw;
        if (i >= 0 && i < static_cast<int64_t>(j.size())) return child(obj, j[static_cast<size_t>(i)]);
      } else {
        const std::u32string u = py::decode_utf8(str(obj));
        const int64_t i = raw < 0 ? raw + static_cast<int64_t>(u.size()) : raw;
        if (i >= 0 && i < static_cast<int64_t>(u.size())) return Value(Json(py::encode_utf8(u.substr(static_cast<size_t>(i), 1))));
      }
      return Value::undefined(std::string("'").append(obj_desc(obj)) + "' has no element " + std::to_string(raw));
    }
  }
  if (is_str(key)) return get_attr(obj, str(key));
  return Value::undefined(std::string("'").append(obj_desc(obj)) + "' has no element " + to_str(key));
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (is_list(obj)) {
    Json out = Json::array();
    for (size_t i : slice_positions(obj.json().size(), start, stop, step)) out.push_back(obj.json()[i]);
    return Value(std::move(out));
  }
  if (is_str(obj)) {
    const std::u32string u = py::decode_utf8(str(obj));
    std::u32string out;
    for (size_t i : slice_positions(u.size(), start, stop, step)) out += u[i];
    return Value(Json(py::encode_utf8(out)));
  }
  // Jinja2 compiles slices to plain Python subscripts, so anything else is a TypeError.
  if (is_dict(obj)) type_error("unhashable type: 'slice'");
  type_error(std::string("'").append(type_name(obj)) + "' object is not subscriptable");
}

Value apply_filter(const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "default" || name == "d") {
    Params p(name, args, {"default_value", "boolean"});
    const bool boolean = p.has(1) && truthy(p.values[1]);
    if (v.is_undefined() || (boolean && !truthy(v))) return p.has(0) ? p.values[0] : Value(Json(""));
    return v;
  }
  if (name == "tojson") return dumps(v, args);
  if (name == "length" || name == "count") {
    Params p(name, args, {});
    return Value(Json(static_cast<int64_t>(length(v))));
  }
  if (name == "string") {
    Params p(name, args, {});
    return Value(Json(to_str(v)));
  }
  if (name == "trim") {
    Params p(name, args, {"chars"});
    return same_markup(v, py::strip(to_str(v), opt_str(p, 0, "trim"), true, true));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    Params p(name, args, {});
    const std::string s = to_str(v);
    if (name == "upper") return same_markup(v, py::upper(s));
    if (name == "lower") return same_markup(v, py::lower(s));
    if (name == "capitalize") return same_markup(v, py::capitalize(s));
    return Value(Json(jinja_title(s)));
  }
  if (name == "safe") {
    Params p(name, args, {});
    return Value::markup(to_str(v));
  }
  if (name == "escape" || name == "e") {
    Params p(name, args, {});
    return v.is_markup() ? v : Value::markup(html_escape(to_str(v)));
  }
  if (name == "first" || name == "last") {
    Params p(name, args, {});
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined(std::string("No ") + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    Params p(name, args, {"d", "attribute"});
    const std::string sep = p.has(0) ? to_str(p.values[0]) : "";
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v)) {
      if (!first) out += sep;
      first = false;
      out += to_str(p.none(1) ? item : attribute_of(item, to_str(p.values[1])));
    }
    return Value(Json(out));
  }
  if (name == "replace") {
    Params p(name, args, {"old", "new", "count"});
    if (!p.has(1)) type_error("replace filter needs old and new");
    return Value(Json(py::replace(to_str(v), to_str(p.values[0]), to_str(p.values[1]), opt_long(p, 2, -1, "replace"))));
  }
  if (name == "list" || name == "reverse") {
    Params p(name, args, {});
    if (name == "reverse" && is_str(v)) {
      std::u32string u = py::decode_utf8(str(v));
      std::reverse(u.begin(), u.end());
      return Value(Json(py::encode_utf8(u)));
    }
    std::vector<Value> items = iterate(v);
    if (name == "reverse") std::reverse(items.begin(), items.end());
    Json out = Json::array();
    for (const Value& i : items) out.push_back(to_json(i, "in a list"));
    return Value(std::move(out));
  }
  if (name == "items") {
    Params p(name, args, {});
    if (v.is_undefined()) return Value(Json::array());
    if (!is_dict(v)) type_error("Can only get item pairs from a mapping.");
    return dict_method(v, "items", {});
  }
  if (name == "unique") {
    Params p(name, args, {"case_sensitive", "attribute"});
    const bool cs = p.has(0) && truthy(p.values[0]);
    Json out = Json::array();
    std::vector<Value> seen;
    for (const Value& item : iterate(v)) {
      Value key = p.none(1) ? item : attribute_of(item, to_str(p.values[1]));
      if (!cs && is_str(key)) key = Value(Json(py::lower(str(key))));
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, key); })) continue;
      seen.push_back(key);
      out.push_back(to_json(item, "in a list"));
    }
    return Value(std::move(out));
  }
  if (name == "int") {
    Params p(name, args, {"default", "base"});
    const Value dflt = p.has(0) ? p.values[0] : Value(Json(0));
    if (!p.none(1) && as_int(p.values[1]) != 10) type_error("int filter: only base 10 is supported");
    if (is_int(v)) return Value(Json(as_int(v)));
    if (is_num(v)) return Value(Json(static_cast<int64_t>(std::trunc(as_double(v)))));
    if (is_str(v)) {
      if (auto i = parse_python_int(str(v))) return Value(Json(*i));
      if (auto d = parse_python_float(str(v)); d && std::isfinite(*d)) return Value(Json(static_cast<int64_t>(std::trunc(*d))));
    }
    return dflt;
  }
  if (name == "float") {
    Params p(name, args, {"default"});
    const Value dflt = p.has(0) ? p.values[0] : Value(Json(0.0));
    if (is_num(v)) return Value(Json(as_double(v)));
    if (is_str(v))
      if (auto d = parse_python_float(str(v))) return Value(Json(*d));
    return dflt;
  }
  if (name == "abs") {
    Params p(name, args, {});
    if (!is_num(v)) type_error("bad operand type for abs(): '" + type_name(v) + "'");
    if (is_int(v)) {
      const __int128 i = as_int(v);
      return int_value(i < 0 ? -i : i);
    }
    return Value(Json(std::fabs(as_double(v))));
  }
  if (name == "map") return map_filter(v, args);
  if (name == "select" || name == "reject") return select_or_reject(name, v, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return select_or_reject(name, v, args, true, name == "selectattr");
  type_error("unsupported filter '" + name + "'");
}

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

Value call_method(const Value& self, const std::string& name, const CallArgs& args) {
  if (self.is_undefined()) fail_undefined(self);
  if (is_str(self) && kStringMethods.count(name)) return string_method(self, name, args);
  if (is_dict(self) && kDictMethods.count(name)) return dict_method(self, name, args);
  if (self.kind() == Value::Kind::Loop && name == "cycle") {
    if (args.positional.empty()) type_error("no items for cycling given");
    return args.positional[self.loop().index0 % args.positional.size()];
  }
  const Value attr = get_attr(self, name);
  if (attr.is_undefined()) fail_undefined(attr);
  type_error("'" + type_name(attr) + "' object is not callable");
}

Value call_global(const std::string& name, const CallArgs& args) {
  if (name == "raise_exception") {
    if (args.positional.size() != 1) type_error("raise_exception() takes one argument");
    throw TemplateRaised(to_str(args.positional[0]));
  }
  if (name == "namespace" || name == "dict") {
    if (args.positional.size() > 1 || (args.positional.size() == 1 && !is_dict(args.positional[0])))
      type_error(name + "() takes at most one mapping argument");
    std::vector<std::pair<std::string, Value>> attrs;
    if (!args.positional.empty())
      for (auto it = args.positional[0].json().begin(); it != args.positional[0].json().end(); ++it)
        attrs.emplace_back(it.key(), child(args.positional[0], it.value()));
    for (const auto& kv : args.keyword) attrs.push_back(kv);
    if (name == "namespace") {
      auto ns = std::make_shared<NamespaceObject>();
      for (auto& [k, v] : attrs) ns->set(k, v);
      return Value::make_namespace(std::move(ns));
    }
    Json out = Json::object();
    for (auto& [k, v] : attrs) out[k] = to_json(v, "in a dict");
    return Value(std::move(out));
  }
  if (name == "range") {
    if (!args.keyword.empty() || args.positional.empty() || args.positional.size() > 3)
      type_error("range() takes 1 to 3 integer arguments");
    for (const Value& a : args.positional)
      if (!is_int(a)) type_error("'" + type_name(a) + "' object cannot be interpreted as an integer");
    int64_t start = 0, stop = 0, step = 1;
    if (args.positional.size() == 1) stop = as_int(args.positional[0]);
    else start = as_int(args.positional[0]), stop = as_int(args.positional[1]);
    if (args.positional.size() == 3) step = as_int(args.positional[2]);
    if (step == 0) type_error("range() arg 3 must not be zero");
    Json out = Json::array();
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (out.size() >= 1000000) type_error("range() too large");
      out.push_back(i);
    }
    return Value(std::move(out));
  }
  if (name == "strftime_now") {
    if (args.positional.size() != 1 || !is_str(args.positional[0])) type_error("strftime_now() takes one format string");
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[512];
    const size_t n = std::strftime(buf, sizeof buf, str(args.positional[0]).c_str(), &tm);
    return Value(Json(std::string(buf, n)));
  }
  type_error("unsupported function '" + name + "'");
}

Value negate(const Value& v, bool minus) {
  if (v.is_undefined()) fail_undefined(v);
  if (!is_num(v)) type_error(std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" + type_name(v) + "'");
  if (is_int(v)) return int_value(minus ? -static_cast<__int128>(as_int(v)) : as_int(v));
  return Value(Json(minus ? -as_double(v) : as_double(v)));
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "%" && is_str(a)) type_error("unsupported printf-style string formatting ('%')");
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  auto unsupported = [&]() -> Value {
    type_error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  };
  if (op == "+") {
    if (is_str(a) && is_str(b)) {
      if (a.is_markup() || b.is_markup())
        return Value::markup((a.is_markup() ? str(a) : html_escape(str(a))) + (b.is_markup() ? str(b) : html_escape(str(b))));
      return Value(Json(str(a) + str(b)));
    }
    if (is_list(a) && is_list(b)) {
      Json out = a.json();
      for (const auto& e : b.json()) out.push_back(e);
      return Value(std::move(out));
    }
  }
  if (op == "*" && (((is_str(a) || is_list(a)) && is_int(b)) || ((is_str(b) || is_list(b)) && is_int(a)))) {
    const Value& seq = is_int(b) && !is_int(a) ? a : b;
    const int64_t n = std::max<int64_t>(0, as_int(is_int(b) && !is_int(a) ? b : a));
    Json out = is_str(seq) ? Json("") : Json::array();
    for (int64_t i = 0; i < n; ++i) {
      if (is_str(seq)) out.get_ref<std::string&>() += str(seq);
      else for (const auto& e : seq.json()) out.push_back(e);
    }
    return Value(std::move(out));
  }
  if (!is_num(a) || !is_num(b)) return unsupported();
  const bool ints = is_int(a) && is_int(b);
  if (ints && op != "/") {
    const __int128 x = as_int(a), y = as_int(b);
    if (op == "+") return int_value(x + y);
    if (op == "-") return int_value(x - y);
    if (op == "*") return int_value(x * y);
    if (op == "//" || op == "%") {
      if (y == 0) type_error("integer division or modulo by zero");
      __int128 q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) --q, r += y;
      return int_value(op == "//" ? q : r);
    }
    if (op == "**") {
      if (y >= 0) {
        __int128 out = 1;
        for (__int128 i = 0; i < y; ++i) {
          out *= x;
          if (out > INT64_MAX || out < INT64_MIN) type_error("integer result out of 64-bit range");
        }
        return int_value(out);
      }
      if (x == 0) type_error("0.0 cannot be raised to a negative power");
      return Value(Json(std::pow(static_cast<double>(x), static_cast<double>(y))));
    }
    return unsupported();
  }
  const double x = as_double(a), y = as_double(b);
  if (op == "+") return Value(Json(x + y));
  if (op == "-") return Value(Json(x - y));
  if (op == "*") return Value(Json(x * y));
  if (op == "/") {
    if (y == 0) type_error("division by zero");
    return Value(Json(x / y));
  }
  if (op == "//" || op == "%") {
    if (y == 0) type_error("float floor division or modulo by zero");
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0 && ((y < 0) != (mod < 0))) mod += y, div -= 1.0;
    if (op == "%") return Value(Json(mod == 0 ? std::copysign(0.0, y) : mod));
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return Value(Json(div == 0 ? std::copysign(0.0, x / y) : floordiv));
  }
  if (op == "**") {
    if (x == 0 && y < 0) type_error("0.0 cannot be raised to a negative power");
    if (x < 0 && std::isfinite(y) && y != std::floor(y)) type_error("unsupported complex result of '**'");
    return Value(Json(std::pow(x, y)));
  }
  return unsupported();
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return py_equal(a, b);
  if (op == "!=") return !py_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  int c = 0;
  if (is_num(a) && is_num(b)) {
    if (is_int(a) && is_int(b)) c = as_int(a) < as_int(b) ? -1 : as_int(a) > as_int(b) ? 1 : 0;
    else c = as_double(a) < as_double(b) ? -1 : as_double(a) > as_double(b) ? 1 : 0;
    if (!is_int(a) || !is_int(b)) {
      if (std::isnan(as_double(a)) || std::isnan(as_double(b))) return false;
    }
  } else if (is_str(a) && is_str(b)) {
    const int r = str(a).compare(str(b));
    c = r < 0 ? -1 : r > 0 ? 1 : 0;
  } else if (is_list(a) && is_list(b)) {
    const Json &x = a.json(), &y = b.json();
    size_t i = 0;
    while (i < x.size() && i < y.size() && json_equal(x[i], y[i])) ++i;
    if (i < x.size() && i < y.size()) return compare(op, Value(x[i]), Value(y[i]));
    c = x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  } else {
    type_error("'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
  }
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

bool contains(const Value& container, const Value& item) {
  if (container.is_undefined()) return false;
  if (is_str(container)) {
    if (!is_str(item)) type_error("'in <string>' requires string as left operand, not " + type_name(item));
    return str(container).find(str(item)) != std::string::npos;
  }
  if (is_list(container)) {
    for (const auto& e : container.json())
      if (py_equal(Value::borrowed(e), item)) return true;
    return false;
  }
  if (is_dict(container)) return is_str(item) && container.json().contains(str(item));
  type_error("argument of type '" + type_name(container) + "' is not iterable");
}

}  // namespace flashdraft::chat
