// chat_template_render: renders many (template, context) pairs for
// tools/fuzz_chat_template.py, which compares the results with Jinja2.
// Input on stdin: a JSON array of {"template": str, "context": obj}.
// Output on stdout: a JSON array of {"output": str} or {"error": str}.
#include <iostream>
#include <iterator>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"

int main() {
  using Json = nlohmann::ordered_json;
  const std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  Json out = Json::array();
  for (const auto& c : Json::parse(input)) {
    try {
      const auto t = flashdraft::chat::ChatTemplate::parse(c.at("template").get<std::string>());
      out.push_back({{"output", t.render(c.value("context", Json::object()))}});
    } catch (const flashdraft::Error& e) {
      out.push_back({{"error", e.what()}});
    }
  }
  std::cout << out.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  return 0;
}
