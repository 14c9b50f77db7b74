#pragma once
// Typed reads of fields of a JSON object, with errors of the form
//   <source>: field "hidden_size": expected an integer, found "4k"
// A JSON null counts as absent, as Python's config loaders treat it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flashdraft::io {

class JsonFields {
 public:
  // `object` must outlive this reader. `prefix` names a nested object in
  // messages ("rope_parameters.").
  JsonFields(const nlohmann::json& object, std::string source, std::string prefix = "");

  bool has(const std::string& key) const;  // present and not null

  std::optional<int64_t> optional_int(const std::string& key) const;
  std::optional<double> optional_number(const std::string& key) const;
  std::optional<bool> optional_bool(const std::string& key) const;
  std::optional<std::string> optional_string(const std::string& key) const;
  // An int or a list of ints (eos_token_id); empty when absent.
  std::vector<int64_t> int_or_int_list(const std::string& key) const;
  std::vector<std::string> string_list(const std::string& key) const;

  int64_t required_int(const std::string& key) const;
  double required_number(const std::string& key) const;

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  const std::string& source() const { return source_; }

 private:
  const nlohmann::json* find(const std::string& key) const;
  [[noreturn]] void wrong_type(const std::string& key, const char* expected,
                               const nlohmann::json& found) const;

  const nlohmann::json& object_;
  std::string source_;
  std::string prefix_;
};

}  // namespace flashdraft::io
