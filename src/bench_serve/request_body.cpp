#include "bench_serve/request_body.h"

namespace flashdraft::bench_serve {

const char* route_of(Endpoint e) { return e == Endpoint::chat ? "/v1/chat/completions" : "/v1/completions"; }

const char* name_of(Endpoint e) { return e == Endpoint::chat ? "chat" : "completions"; }

std::string request_body(const BenchConfig& config, const BenchPrompt& prompt) {
  nlohmann::json body = {{"model", config.model},
                         {"max_tokens", prompt.max_tokens.value_or(config.max_tokens)},
                         {"temperature", config.temperature},
                         {"stream", true},
                         {"stream_options", {{"include_usage", true}}}};
  if (config.endpoint == Endpoint::chat) {
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", prompt.text}}});
  } else {
    body["prompt"] = prompt.text;
  }
  if (config.ignore_eos) body["ignore_eos"] = true;
  if (config.extra_body.is_object()) body.update(config.extra_body);
  return body.dump();
}

}  // namespace flashdraft::bench_serve
