#pragma once
// Helpers shared by the builtin implementations (filters, tests, methods,
// operators, attribute access): Python type checks, argument binding, and
// the name tables the parser validates against.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "chat/builtins.h"

namespace flashdraft::chat::detail {

extern const std::set<std::string> kFilters;
extern const std::set<std::string> kTests;
extern const std::set<std::string> kStringMethods;
extern const std::set<std::string> kDictMethods;
extern const std::set<std::string> kGlobals;
extern const std::set<std::string> kLoopAttributes;

[[noreturn]] void type_error(const std::string& msg);
// How Jinja names an object in "'X' has no attribute" messages.
std::string obj_desc(const Value& v);

inline bool is_str(const Value& v) { return v.is_json() && v.json().is_string(); }
inline bool is_list(const Value& v) { return v.is_json() && v.json().is_array(); }
inline bool is_dict(const Value& v) { return v.is_json() && v.json().is_object(); }
inline bool is_int(const Value& v) { return v.is_json() && (v.json().is_number_integer() || v.json().is_boolean()); }
inline bool is_num(const Value& v) { return v.is_json() && (v.json().is_number() || v.json().is_boolean()); }
inline const std::string& str(const Value& v) { return v.json().get_ref<const std::string&>(); }

int64_t as_int(const Value& v);  // bool counts as int, like Python
double as_double(const Value& v);
Value int_value(__int128 v);  // fails outside int64 instead of wrapping
// An element of a container keeps borrowing from the render context if the container did.
Value child(const Value& parent, const Json& elem);
Json to_json(const Value& v, const char* what);

// Binds call arguments to parameter names like Python does for simple signatures.
struct Params {
  Params(const std::string& fn, const CallArgs& args, std::initializer_list<const char*> names);
  bool has(size_t i) const { return given.count(i) > 0; }
  // An argument that is absent or None.
  bool none(size_t i) const { return !has(i) || (values[i].is_json() && values[i].json().is_null()); }
  std::vector<Value> values;
  std::set<size_t> given;
};

std::string arg_str(const Value& v, const std::string& fn);
std::optional<std::string> opt_str(const Params& p, size_t i, const std::string& fn);
long opt_long(const Params& p, size_t i, long fallback, const std::string& fn);
Value string_list(const std::vector<std::string>& parts);
// Python's slice.indices() followed by the walk it describes.
std::vector<size_t> slice_positions(size_t len, const Value& start, const Value& stop, const Value& step);
// markupsafe.escape.
std::string html_escape(const std::string& s);
// Markup's str methods and Jinja's trim/upper/lower/capitalize keep a string marked safe.
Value same_markup(const Value& src, std::string s);

}  // namespace flashdraft::chat::detail
