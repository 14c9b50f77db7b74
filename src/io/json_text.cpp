#include "io/json_text.h"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace flashdraft::io {

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error(path.string() + ": read error");
  return buffer.str();
}

nlohmann::json parse_json(std::string_view text, const std::string& source,
                          bool reject_duplicate_keys) {
  using nlohmann::json;
  std::vector<std::set<std::string>> keys_per_object;
  json::parser_callback_t on_event = [&](int, json::parse_event_t event, json& parsed) {
    if (!reject_duplicate_keys) return true;
    switch (event) {
      case json::parse_event_t::object_start:
        keys_per_object.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys_per_object.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!keys_per_object.back().insert(key).second) {
          throw Error(source + ": key \"" + key +
                      "\" appears twice in one JSON object (expected unique names)");
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), on_event);
  } catch (const json::exception& e) {
    throw Error(source + ": invalid JSON: " + e.what());
  }
}

std::string json_excerpt(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  constexpr size_t kMax = 80;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace flashdraft::io
