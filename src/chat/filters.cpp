// Jinja2 filters, with transformers' json.dumps-based tojson.
#include "chat/builtin_support.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>

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

// Jinja's make_multi_attrgetter: comma-separated attribute paths, strings lower-cased unless case_sensitive.
Value sort_key(const Value& item, const std::string& attribute, bool case_sensitive) {
  auto post = [&](Value v) { return !case_sensitive && is_str(v) ? Value(Json(py::lower(str(v)))) : v; };
  if (attribute.empty()) return post(item);
  Json parts = Json::array();
  for (const std::string& path : py::split(attribute, std::string(","), -1))
    parts.push_back(to_json(post(attribute_of(item, path)), "in a sort key"));
  return Value(std::move(parts));
}

// sorted(): stable, only '<', and reverse keeps equal items in their original order.
std::vector<Value> sorted_by(std::vector<Value> items, const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reverse ? compare("<", keys[b], keys[a]) : compare("<", keys[a], keys[b]);
  });
  std::vector<Value> out;
  for (size_t i : order) out.push_back(std::move(items[i]));
  return out;
}

Value json_list(const std::vector<Value>& items) {
  Json out = Json::array();
  for (const Value& v : items) out.push_back(to_json(v, "in a list"));
  return Value(std::move(out));
}

Value sort_filter(const Value& v, const CallArgs& args) {
  Params p("sort", args, {"reverse", "case_sensitive", "attribute"});
  const std::string attribute = p.none(2) ? "" : to_str(p.values[2]);
  const bool case_sensitive = p.has(1) && truthy(p.values[1]);
  std::vector<Value> items = iterate(v), keys;
  for (const Value& item : items) keys.push_back(sort_key(item, attribute, case_sensitive));
  return json_list(sorted_by(std::move(items), keys, p.has(0) && truthy(p.values[0])));
}

Value dictsort_filter(const Value& v, const CallArgs& args) {
  Params p("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!is_dict(v)) type_error("dictsort needs a mapping, not " + type_name(v));
  const std::string by = p.has(1) ? to_str(p.values[1]) : "key";
  if (by != "key" && by != "value") type_error("You can only sort by either \"key\" or \"value\"");
  const bool case_sensitive = p.has(0) && truthy(p.values[0]);
  std::vector<Value> items, keys;
  for (auto it = v.json().begin(); it != v.json().end(); ++it) {
    items.emplace_back(Json::array({it.key(), it.value()}));
    keys.push_back(sort_key(by == "key" ? Value(Json(it.key())) : Value(it.value()), "", case_sensitive));
  }
  return json_list(sorted_by(std::move(items), keys, p.has(2) && truthy(p.values[2])));
}

Value min_max_filter(const std::string& name, const Value& v, const CallArgs& args) {
  Params p(name, args, {"case_sensitive", "attribute"});
  const std::string attribute = p.none(1) ? "" : to_str(p.values[1]);
  const bool case_sensitive = p.has(0) && truthy(p.values[0]);
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(items[0], attribute, case_sensitive);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(items[i], attribute, case_sensitive);
    if (compare(name == "min" ? "<" : ">", key, best_key)) best = i, best_key = std::move(key);
  }
  return items[best];
}

Value indent_filter(const Value& v, const CallArgs& args) {
  Params p("indent", args, {"width", "first", "blank"});
  if (v.is_undefined()) fail_undefined(v);
  if (!is_str(v)) type_error("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
  std::string indention = "    ";
  if (p.has(0)) indention = is_str(p.values[0]) ? str(p.values[0]) : std::string(static_cast<size_t>(std::max<int64_t>(0, as_int(p.values[0]))), ' ');
  const bool first = p.has(1) && truthy(p.values[1]);
  const bool blank = p.has(2) && truthy(p.values[2]);
  // Jinja appends a newline first so that splitlines() keeps a trailing empty line.
  std::vector<std::string> lines = py::splitlines(str(v) + "\n", false);
  std::string rv;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) rv += "\n";
    rv += (i > 0 && (blank || !lines[i].empty())) ? indention + lines[i] : lines[i];
  }
  if (first) rv = indention + rv;
  return same_markup(v, rv);
}

Value sum_filter(const Value& v, const CallArgs& args) {
  Params p("sum", args, {"attribute", "start"});
  Value total = p.has(1) ? p.values[1] : Value(Json(0));
  for (const Value& item : iterate(v)) total = binary_op("+", total, p.none(0) ? item : attribute_of(item, to_str(p.values[0])));
  return total;
}

Value round_filter(const Value& v, const CallArgs& args) {
  Params p("round", args, {"precision", "method"});
  const int64_t precision = p.has(0) ? as_int(p.values[0]) : 0;
  const std::string method = p.has(1) ? to_str(p.values[1]) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    type_error("method must be common, ceil or floor");
  if (!is_num(v)) type_error("type " + type_name(v) + " doesn't define __round__ method");
  if (precision < 0 || precision > 300) type_error("unsupported round() precision " + std::to_string(precision));
  if (method == "common") {
    if (is_int(v)) return Value(Json(as_int(v)));  // round(int, n >= 0) is the int itself
    // Python rounds the exact binary value to nearest, ties to even; so does printf.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), as_double(v));
    return Value(Json(std::strtod(buf, nullptr)));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = as_double(v) * scale;
  return Value(Json((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale));
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
  if (name == "sort") return sort_filter(v, args);
  if (name == "dictsort") return dictsort_filter(v, args);
  if (name == "min" || name == "max") return min_max_filter(name, v, args);
  if (name == "indent") return indent_filter(v, args);
  if (name == "sum") return sum_filter(v, args);
  if (name == "round") return round_filter(v, args);
  if (name == "select" || name == "reject") return select_or_reject(name, v, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return select_or_reject(name, v, args, true, name == "selectattr");
  type_error("unsupported filter '" + name + "'");
}

}  // namespace flashdraft::chat
