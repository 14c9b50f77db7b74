#include "chat/value.h"

#include <cmath>

#include "chat/py_str.h"

namespace flashdraft::chat {

const Value* NamespaceObject::find(const std::string& name) const {
  for (const auto& [k, v] : attrs)
    if (k == name) return v.get();
  return nullptr;
}

void NamespaceObject::set(const std::string& name, Value v) {
  for (auto& [k, slot] : attrs)
    if (k == name) {
      *slot = std::move(v);
      return;
    }
  attrs.emplace_back(name, std::make_shared<Value>(std::move(v)));
}

Value::Value() = default;

Value Value::undefined(std::string hint) {
  Value v;
  v.text_ = std::move(hint);
  return v;
}

Value Value::borrowed(const Json& j) {
  Value v;
  v.kind_ = Kind::Json;
  v.ref_ = &j;
  return v;
}

Value::Value(Json j) : kind_(Kind::Json), owned_(std::move(j)) {}

Value Value::make_namespace(std::shared_ptr<NamespaceObject> ns) {
  Value v;
  v.kind_ = Kind::Namespace;
  v.ns_ = std::move(ns);
  return v;
}

Value Value::make_loop(std::shared_ptr<LoopObject> loop) {
  Value v;
  v.kind_ = Kind::Loop;
  v.loop_ = std::move(loop);
  return v;
}

Value Value::function(std::string name, std::shared_ptr<Value> self) {
  Value v;
  v.kind_ = Kind::Function;
  v.text_ = std::move(name);
  v.self_ = std::move(self);
  return v;
}

Value Value::macro(std::string name, std::shared_ptr<const MacroClosure> closure) {
  Value v = function(std::move(name));
  v.macro_ = std::move(closure);
  return v;
}

Value Value::markup(std::string s) {
  Value v{Json(std::move(s))};
  v.markup_ = true;
  return v;
}

static bool json_truthy(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return false;
    case Json::value_t::boolean: return j.get<bool>();
    case Json::value_t::number_integer: return j.get<int64_t>() != 0;
    case Json::value_t::number_unsigned: return j.get<uint64_t>() != 0;
    case Json::value_t::number_float: return j.get<double>() != 0.0;
    case Json::value_t::string: return !j.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object: return !j.empty();
    default: return true;
  }
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::Json: return json_truthy(v.json());
    default: return true;
  }
}

static bool is_number(const Json& j) { return j.is_number() || j.is_boolean(); }

static double as_double(const Json& j) {
  if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
  if (j.is_number_unsigned()) return static_cast<double>(j.get<uint64_t>());
  if (j.is_number_integer()) return static_cast<double>(j.get<int64_t>());
  return j.get<double>();
}

bool json_equal(const Json& a, const Json& b) {
  if (is_number(a) && is_number(b)) {
    if (a.is_number_float() || b.is_number_float()) return as_double(a) == as_double(b);
    auto as_int = [](const Json& j) -> __int128 {
      if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
      if (j.is_number_unsigned()) return static_cast<__int128>(j.get<uint64_t>());
      return j.get<int64_t>();
    };
    return as_int(a) == as_int(b);
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Json::value_t::null: return true;
    case Json::value_t::string: return a.get_ref<const std::string&>() == b.get_ref<const std::string&>();
    case Json::value_t::array:
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!json_equal(a[i], b[i])) return false;
      return true;
    case Json::value_t::object:
      // Python dict equality ignores key order.
      if (a.size() != b.size()) return false;
      for (auto it = a.begin(); it != a.end(); ++it) {
        auto other = b.find(it.key());
        if (other == b.end() || !json_equal(it.value(), *other)) return false;
      }
      return true;
    default: return a == b;
  }
}

bool py_equal(const Value& a, const Value& b) {
  if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
  if (a.is_json() && b.is_json()) return json_equal(a.json(), b.json());
  if (a.kind() == Value::Kind::Namespace && b.kind() == Value::Kind::Namespace) return &a.ns() == &b.ns();
  if (a.kind() == Value::Kind::Loop && b.kind() == Value::Kind::Loop) return &a.loop() == &b.loop();
  return false;
}

static std::string int_str(const Json& j) {
  return j.is_number_unsigned() ? std::to_string(j.get<uint64_t>()) : std::to_string(j.get<int64_t>());
}

static std::string container_repr(const Json& j) {
  std::string out;
  if (j.is_array()) {
    out = "[";
    bool first = true;
    for (const auto& e : j) {
      if (!first) out += ", ";
      first = false;
      out += json_repr(e);
    }
    return out + "]";
  }
  out = "{";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    out += py::repr(it.key()) + ": " + json_repr(it.value());
  }
  return out + "}";
}

std::string json_str(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "None";
    case Json::value_t::boolean: return j.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return int_str(j);
    case Json::value_t::number_float: return py::float_repr(j.get<double>());
    case Json::value_t::string: return j.get<std::string>();
    case Json::value_t::array:
    case Json::value_t::object: return container_repr(j);
    default: return "";
  }
}

std::string json_repr(const Json& j) {
  if (j.is_string()) return py::repr(j.get_ref<const std::string&>());
  return json_str(j);
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::Json: return json_str(v.json());
    case Value::Kind::Namespace: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, val] : v.ns().attrs) {
        if (!first) out += ", ";
        first = false;
        out += py::repr(k) + ": " + (val->is_json() ? json_repr(val->json()) : to_str(*val));
      }
      return out + "}>";
    }
    case Value::Kind::Loop:
      return "<LoopContext " + std::to_string(v.loop().index0 + 1) + "/" + std::to_string(v.loop().items->size()) + ">";
    case Value::Kind::Function:
      return v.macro_closure() ? "<Macro '" + v.function_name() + "'>" : "<function " + v.function_name() + ">";
  }
  return "";
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::Namespace: return "Namespace";
    case Value::Kind::Loop: return "LoopContext";
    case Value::Kind::Function: return "function";
    case Value::Kind::Json: break;
  }
  switch (v.json().type()) {
    case Json::value_t::null: return "NoneType";
    case Json::value_t::boolean: return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "int";
    case Json::value_t::number_float: return "float";
    case Json::value_t::string: return "str";
    case Json::value_t::array: return "list";
    case Json::value_t::object: return "dict";
    default: return "object";
  }
}

}  // namespace flashdraft::chat
