#pragma once
// --base-url: where the server listens, as vLLM's bench spells it
// (http://127.0.0.1:8000) or as OpenAI clients do (.../v1; the /v1 is
// dropped, the routes add it back).
#include <string>

namespace flashdraft::bench_serve {

struct BaseUrl {
  std::string scheme;  // http or https
  std::string host;    // IPv6 literals keep their brackets
  int port = 0;
  std::string prefix;  // path before /v1/..., "" or "/something" (no trailing '/')

  std::string origin() const;           // scheme://host:port
  std::string url(const std::string& route) const;  // origin + prefix + route, for messages
};

// Throws UsageError naming --base-url for anything but http(s)://host[:port][/path].
BaseUrl parse_base_url(const std::string& text);

}  // namespace flashdraft::bench_serve
