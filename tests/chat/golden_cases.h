#pragma once
// Loading the golden files written by tools/gen_chat_golden.py.
#include <fstream>
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

inline std::vector<Json> load_cases(const std::string& name) {
  std::vector<Json> out;
  for (auto& c : Json::parse(read_file(fixture(name)))) out.push_back(c);
  return out;
}

// gtest parameter names allow only [A-Za-z0-9_].
inline std::string case_name(const Json& c) { return c.at("name").get<std::string>(); }

}  // namespace flashdraft::chat::testing
