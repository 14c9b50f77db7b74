#pragma once
// Typed reads of a request body's fields. A wrong type or value is an
// ApiError 400 whose param is the field's path ("messages[2].content"), so a
// client learns exactly what to fix. JSON null counts as absent, as in
// OpenAI's API.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flashdraft::server {

using Json = nlohmann::ordered_json;  // keeps key order: templates print tools and arguments as sent

class RequestFields {
 public:
  // `object` must outlive this reader; `path` prefixes field names ("" at top level).
  RequestFields(const Json& object, std::string path = "");

  const Json* find(const std::string& key) const;  // nullptr when absent or null
  std::string path_of(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;

  std::optional<bool> boolean(const std::string& key) const;
  std::optional<int64_t> integer(const std::string& key) const;
  std::optional<double> number(const std::string& key) const;
  std::optional<std::string> string(const std::string& key) const;
  // A string or a list of strings (stop).
  std::vector<std::string> string_or_strings(const std::string& key) const;
  std::vector<int64_t> integers(const std::string& key) const;
  const Json* object(const std::string& key) const;
  const Json* array(const std::string& key) const;

  // Number within [lo, hi] (either bound may be open: lo_open / hi_open).
  std::optional<double> number_in(const std::string& key, double lo, double hi, bool lo_open = false,
                                  bool hi_open = false) const;
  std::optional<int64_t> integer_at_least(const std::string& key, int64_t lo) const;

 private:
  const Json& object_;
  std::string path_;
};

// A short excerpt of a JSON value for messages ("\"abc\"", "[1,2,...]").
std::string json_excerpt(const Json& value);

}  // namespace flashdraft::server
