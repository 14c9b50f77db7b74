#pragma once
// The runtime value of the template interpreter: a JSON value (borrowed from
// the render context when possible, so large conversations are not copied on
// every `message.content`), or one of the Jinja-only objects: Undefined,
// namespace(), the loop object, and callables.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace flashdraft::chat {

using Json = nlohmann::ordered_json;

class Value;
struct MacroClosure;  // defined by the interpreter

struct NamespaceObject {
  std::vector<std::pair<std::string, std::shared_ptr<Value>>> attrs;  // insertion order, like a dict
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v);
};

struct LoopObject {
  std::shared_ptr<const std::vector<Value>> items;
  size_t index0 = 0;
};

class Value {
 public:
  enum class Kind { Undefined, Json, Namespace, Loop, Function };

  Value();  // Undefined without a hint
  static Value undefined(std::string hint);
  static Value borrowed(const Json& j);  // j must outlive the value (the render context)
  Value(Json j);
  static Value make_namespace(std::shared_ptr<NamespaceObject> ns);
  static Value make_loop(std::shared_ptr<LoopObject> loop);
  // A global function ("namespace", "range", ...) or a bound method (self is the object).
  static Value function(std::string name, std::shared_ptr<Value> self = nullptr);
  static Value macro(std::string name, std::shared_ptr<const MacroClosure> closure);
  // A string marked safe (markupsafe.Markup): `+` with a plain string escapes the other side.
  static Value markup(std::string s);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_json() const { return kind_ == Kind::Json; }
  const Json& json() const { return ref_ ? *ref_ : owned_; }
  const std::string& undefined_hint() const { return text_; }
  const std::string& function_name() const { return text_; }
  const std::shared_ptr<Value>& bound_self() const { return self_; }
  NamespaceObject& ns() const { return *ns_; }
  const LoopObject& loop() const { return *loop_; }
  bool is_borrowed() const { return ref_ != nullptr; }
  const std::shared_ptr<const MacroClosure>& macro_closure() const { return macro_; }
  bool is_markup() const { return markup_; }

 private:
  Kind kind_ = Kind::Undefined;
  Json owned_;
  const Json* ref_ = nullptr;
  std::string text_;
  std::shared_ptr<Value> self_;
  std::shared_ptr<NamespaceObject> ns_;
  std::shared_ptr<LoopObject> loop_;
  std::shared_ptr<const MacroClosure> macro_;
  bool markup_ = false;
};

// Python semantics on values.
bool truthy(const Value& v);
bool py_equal(const Value& a, const Value& b);
bool json_equal(const Json& a, const Json& b);
// str(v) as `{{ v }}` prints it; repr(v) as it appears inside a list or dict.
std::string to_str(const Value& v);
std::string json_str(const Json& j);
std::string json_repr(const Json& j);
// Python's type name, used in error messages ("'list object' has no attribute ...").
std::string type_name(const Value& v);

}  // namespace flashdraft::chat
