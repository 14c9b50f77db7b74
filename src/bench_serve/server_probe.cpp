#include "bench_serve/server_probe.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench_serve/stream_chunk.h"
#include "core/error.h"

namespace flashdraft::bench_serve {

std::string probe_server(const ClientOptions& options, const std::string& model) {
  const HttpReply reply = http_get(options, "/v1/models");
  if (!reply.error.empty())
    throw Error(fmt::format("{}; is the server running? (start one with 'flashdraft serve --model DIR', or point "
                            "--base-url at yours)",
                            reply.error));
  if (reply.status == 401 || reply.status == 403)
    throw Error(fmt::format("the server refused the API key (HTTP {}: {}); pass --api-key KEY or set OPENAI_API_KEY",
                            reply.status, error_message_of(reply.body)));
  if (!model.empty()) return model;  // some servers have no /v1/models; the requests will tell
  if (reply.status != 200)
    throw Error(fmt::format("GET {}: HTTP {}: {}; name the model with --model", options.server.url("/v1/models"),
                            reply.status, error_message_of(reply.body)));
  const nlohmann::json j = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() && j["data"][0].is_object() &&
      j["data"][0].contains("id") && j["data"][0]["id"].is_string())
    return j["data"][0]["id"].get<std::string>();
  throw Error(fmt::format("GET {} lists no model id; name the model with --model", options.server.url("/v1/models")));
}

SpecScrape scrape_spec_counters(const ClientOptions& options) {
  SpecScrape s;
  const HttpReply reply = http_get(options, "/metrics");
  if (!reply.error.empty()) {
    s.note = "GET /metrics failed: " + reply.error;
  } else if (reply.status != 200) {
    s.note = fmt::format("GET /metrics: HTTP {}", reply.status);
  } else {
    s.counters = spec_decode_counters(parse_prometheus_text(reply.body));
    if (!s.counters) s.note = "/metrics has no vllm:spec_decode_* counters";
  }
  return s;
}

}  // namespace flashdraft::bench_serve
