#include "io/json_fields.h"

#include "core/error.h"
#include "io/json_text.h"

namespace flashdraft::io {

using nlohmann::json;

JsonFields::JsonFields(const json& object, std::string source, std::string prefix)
    : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {
  if (!object_.is_object()) {
    throw Error(source_ + ": " + (prefix_.empty() ? std::string("top level") : prefix_) +
                ": expected a JSON object, found " + json_excerpt(object_));
  }
}

const json* JsonFields::find(const std::string& key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::has(const std::string& key) const { return find(key) != nullptr; }

void JsonFields::fail(const std::string& key, const std::string& problem) const {
  throw Error(source_ + ": field \"" + prefix_ + key + "\": " + problem);
}

void JsonFields::wrong_type(const std::string& key, const char* expected, const json& found) const {
  fail(key, std::string("expected ") + expected + ", found " + json_excerpt(found));
}

std::optional<int64_t> JsonFields::optional_int(const std::string& key) const {
  const json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) wrong_type(key, "a 64-bit integer", *v);
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  if (!v->is_number_integer()) wrong_type(key, "an integer", *v);
  return v->get<int64_t>();
}

std::optional<double> JsonFields::optional_number(const std::string& key) const {
  const json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) wrong_type(key, "a number", *v);
  return v->get<double>();
}

std::optional<bool> JsonFields::optional_bool(const std::string& key) const {
  const json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) wrong_type(key, "true or false", *v);
  return v->get<bool>();
}

std::optional<std::string> JsonFields::optional_string(const std::string& key) const {
  const json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) wrong_type(key, "a string", *v);
  return v->get<std::string>();
}

std::vector<int64_t> JsonFields::int_or_int_list(const std::string& key) const {
  const json* v = find(key);
  if (v == nullptr) return {};
  if (v->is_number_integer()) return {v->get<int64_t>()};
  if (!v->is_array()) wrong_type(key, "an integer or a list of integers", *v);
  std::vector<int64_t> out;
  for (const json& item : *v) {
    if (!item.is_number_integer()) wrong_type(key, "an integer or a list of integers", *v);
    out.push_back(item.get<int64_t>());
  }
  return out;
}

std::vector<std::string> JsonFields::string_list(const std::string& key) const {
  const json* v = find(key);
  if (v == nullptr) return {};
  if (!v->is_array()) wrong_type(key, "a list of strings", *v);
  std::vector<std::string> out;
  for (const json& item : *v) {
    if (!item.is_string()) wrong_type(key, "a list of strings", *v);
    out.push_back(item.get<std::string>());
  }
  return out;
}

int64_t JsonFields::required_int(const std::string& key) const {
  auto v = optional_int(key);
  if (!v) fail(key, "missing (required: an integer)");
  return *v;
}

double JsonFields::required_number(const std::string& key) const {
  auto v = optional_number(key);
  if (!v) fail(key, "missing (required: a number)");
  return *v;
}

}  // namespace flashdraft::io
