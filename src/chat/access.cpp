// Attribute, item and slice access, iteration and len() with Jinja2's rules.
#include "chat/builtin_support.h"

#include "chat/py_str.h"

namespace flashdraft::chat {

using namespace detail;

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

}  // namespace flashdraft::chat
