#pragma once
// Filters, tests, methods and global functions the interpreter implements.
// The parser checks names against these lists so that an unsupported
// template fails when it is loaded, not in the middle of serving a request.
#include <string>
#include <vector>

#include "chat/value.h"
#include "core/error.h"

namespace flashdraft::chat {

bool is_supported_filter(const std::string& name);
bool is_supported_test(const std::string& name);
bool is_supported_method(const std::string& name);
bool is_supported_global_function(const std::string& name);
bool is_supported_loop_attribute(const std::string& name);

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Each throws flashdraft::Error (without the line prefix; the caller adds it).
Value apply_filter(const std::string& name, const Value& operand, const CallArgs& args);
bool apply_test(const std::string& name, const Value& operand, const CallArgs& args);
Value call_method(const Value& self, const std::string& name, const CallArgs& args);
Value call_global(const std::string& name, const CallArgs& args);

// Attribute lookup with Jinja's rules (attribute first, then item) and the
// subscript variant (item first, then attribute).
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// The items a for loop walks: list elements, dict keys, string code points.
std::vector<Value> iterate(const Value& v);
// len(v) as |length computes it.
size_t length(const Value& v);

}  // namespace flashdraft::chat

namespace flashdraft::chat {

// raise_exception(msg) from the template: the message reaches the caller verbatim.
struct TemplateRaised : Error {
  using Error::Error;
};

// UndefinedError: using an undefined value where Jinja2 refuses to.
[[noreturn]] void fail_undefined(const Value& v);

Value binary_op(const std::string& op, const Value& a, const Value& b);
Value negate(const Value& v, bool minus);
bool compare(const std::string& op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);

}  // namespace flashdraft::chat
