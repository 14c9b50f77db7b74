#pragma once
// Loading the golden files written by tools/gen_chat_golden.py.
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flashdraft::chat::testing {

using Json = nlohmann::ordered_json;

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string fixture(const std::string& name) { return std::string(FD_FIXTURES_DIR) + "/chat/" + name; }

// One golden case; gtest prints it by name only, keeping ctest's test list readable.
struct GoldenCase {
  Json data;
  const Json& at(const char* key) const { return data.at(key); }
  bool contains(const char* key) const { return data.contains(key); }
};
inline void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.data.at("name").get<std::string>(); }

inline std::vector<GoldenCase> load_cases(const std::string& name) {
  std::vector<GoldenCase> out;
  for (auto& c : Json::parse(read_file(fixture(name)))) out.push_back({c});
  return out;
}

// gtest parameter names allow only [A-Za-z0-9_].
inline std::string case_name(const GoldenCase& c) { return c.at("name").get<std::string>(); }

}  // namespace flashdraft::chat::testing
