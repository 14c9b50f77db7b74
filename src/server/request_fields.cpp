#include "server/request_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "server/api_error.h"

namespace flashdraft::server {

std::string json_excerpt(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  constexpr size_t kMax = 60;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

RequestFields::RequestFields(const Json& object, std::string path) : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) {
    throw ApiError(400,
                   fmt::format("{}: expected a JSON object, got {}", path_.empty() ? "request body" : path_,
                               json_excerpt(object_)),
                   path_.empty() ? std::nullopt : std::optional<std::string>(path_));
  }
}

std::string RequestFields::path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void RequestFields::fail(const std::string& key, const std::string& problem) const {
  throw invalid_field(path_of(key), problem);
}

const Json* RequestFields::find(const std::string& key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<bool> RequestFields::boolean(const std::string& key) const {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(key, "expected true or false, got " + json_excerpt(*v));
  return v->get<bool>();
}

std::optional<int64_t> RequestFields::integer(const std::string& key) const {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    fail(key, "integer too large: " + json_excerpt(*v));
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  // 2.0 is an integer to Python's pydantic too.
  if (v->is_number_float() && std::isfinite(v->get<double>()) && v->get<double>() == std::trunc(v->get<double>()) &&
      std::abs(v->get<double>()) < 9e15) {
    return static_cast<int64_t>(v->get<double>());
  }
  fail(key, "expected an integer, got " + json_excerpt(*v));
}

std::optional<double> RequestFields::number(const std::string& key) const {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(key, "expected a number, got " + json_excerpt(*v));
  return v->get<double>();
}

std::optional<std::string> RequestFields::string(const std::string& key) const {
  const Json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(key, "expected a string, got " + json_excerpt(*v));
  return v->get<std::string>();
}

std::vector<std::string> RequestFields::string_or_strings(const std::string& key) const {
  const Json* v = find(key);
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) fail(key, "expected a string or a list of strings, got " + json_excerpt(*v));
  std::vector<std::string> out;
  for (const Json& item : *v) {
    if (!item.is_string()) fail(key, "expected a string or a list of strings, got " + json_excerpt(*v));
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<int64_t> RequestFields::integers(const std::string& key) const {
  const Json* v = find(key);
  if (!v) return {};
  if (!v->is_array()) fail(key, "expected a list of integers, got " + json_excerpt(*v));
  std::vector<int64_t> out;
  for (const Json& item : *v) {
    if (!item.is_number_integer()) fail(key, "expected a list of integers, got " + json_excerpt(*v));
    out.push_back(item.get<int64_t>());
  }
  return out;
}

const Json* RequestFields::object(const std::string& key) const {
  const Json* v = find(key);
  if (v && !v->is_object()) fail(key, "expected a JSON object, got " + json_excerpt(*v));
  return v;
}

const Json* RequestFields::array(const std::string& key) const {
  const Json* v = find(key);
  if (v && !v->is_array()) fail(key, "expected a list, got " + json_excerpt(*v));
  return v;
}

std::optional<double> RequestFields::number_in(const std::string& key, double lo, double hi, bool lo_open,
                                               bool hi_open) const {
  std::optional<double> v = number(key);
  if (!v) return v;
  const bool ok = std::isfinite(*v) && (lo_open ? *v > lo : *v >= lo) && (hi_open ? *v < hi : *v <= hi);
  if (!ok) {
    fail(key, fmt::format("must be in {}{}, {}{}, got {}", lo_open ? "(" : "[", lo,
                          std::isinf(hi) ? std::string("inf") : fmt::format("{}", hi), hi_open ? ")" : "]", *v));
  }
  return v;
}

std::optional<int64_t> RequestFields::integer_at_least(const std::string& key, int64_t lo) const {
  std::optional<int64_t> v = integer(key);
  if (v && *v < lo) fail(key, fmt::format("must be >= {}, got {}", lo, *v));
  return v;
}

}  // namespace flashdraft::server
