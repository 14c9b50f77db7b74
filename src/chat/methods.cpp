// Python str/dict methods, loop.cycle, and the global functions templates call.
#include "chat/builtin_support.h"

#include <algorithm>
#include <ctime>

#include "chat/py_str.h"

namespace flashdraft::chat {

using namespace detail;

namespace {

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
    return string_list(py::splitlines(s, keep));
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

}  // namespace flashdraft::chat
