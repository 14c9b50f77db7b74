// Jinja2 filters, with transformers' json.dumps-based tojson.
#include "chat/builtin_support.h"

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "chat/py_json.h"
#include "chat/py_str.h"

namespace flashdraft::chat {

using namespace detail;

namespace {

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

}  // namespace

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
    return call_method(v, "items", {});
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

}  // namespace flashdraft::chat
