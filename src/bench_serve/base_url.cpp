#include "bench_serve/base_url.h"

#include <fmt/format.h>

#include <charconv>

#include "core/error.h"

namespace flashdraft::bench_serve {

std::string BaseUrl::origin() const { return fmt::format("{}://{}:{}", scheme, host, port); }

std::string BaseUrl::url(const std::string& route) const { return origin() + prefix + route; }

BaseUrl parse_base_url(const std::string& text) {
  auto bad = [&](const char* why) {
    return UsageError(fmt::format("--base-url {}: {} (expected http://HOST:PORT, e.g. http://127.0.0.1:8000)", text, why));
  };
  BaseUrl u;
  const size_t sep = text.find("://");
  if (sep == std::string::npos) throw bad("no scheme");
  u.scheme = text.substr(0, sep);
  if (u.scheme != "http" && u.scheme != "https") throw bad("the scheme must be http or https");
  std::string rest = text.substr(sep + 3);
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  u.prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  if (u.prefix.size() >= 3 && u.prefix.compare(u.prefix.size() - 3, 3, "/v1") == 0) u.prefix.resize(u.prefix.size() - 3);
  if (u.prefix.find_first_of("?#") != std::string::npos) throw bad("a query or fragment has no place here");

  u.port = u.scheme == "https" ? 443 : 80;
  size_t port_colon = std::string::npos;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) throw bad("unclosed '[' in the host");
    u.host = authority.substr(0, close + 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') throw bad("unexpected text after the host");
      port_colon = close + 1;
    }
  } else {
    port_colon = authority.find(':');
    u.host = authority.substr(0, port_colon);
  }
  if (u.host.empty() || u.host == "[]") throw bad("no host");
  if (port_colon != std::string::npos) {
    const std::string port = authority.substr(port_colon + 1);
    int p = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 1 || p > 65535)
      throw bad("the port must be a number from 1 to 65535");
    u.port = p;
  }
  return u;
}

}  // namespace flashdraft::bench_serve
