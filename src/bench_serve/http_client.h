#pragma once
// The HTTP side of bench serve (cpp-httplib): plain GETs (/v1/models,
// /metrics) and one streamed POST per benchmark request. Every failure comes
// back as a message (connection refused, timeouts, HTTP 4xx/5xx with the
// body's error message), never as an exception. Safe to call from many
// threads at once: each call opens its own connection.
#include <string>

#include "bench_serve/base_url.h"
#include "bench_serve/request_result.h"

namespace flashdraft::bench_serve {

struct ClientOptions {
  BaseUrl server;
  std::string api_key;   // sent as "Authorization: Bearer KEY" when not empty
  double timeout = 600;  // seconds without a byte from the server before giving up
};

struct HttpReply {
  int status = 0;     // 0 when no answer came
  std::string body;
  std::string error;  // empty when an answer came (whatever its status)
};

// False in a build configured without cpp-httplib: the calls below then
// only return that as their error.
bool http_client_available();

HttpReply http_get(const ClientOptions& options, const std::string& route);

// POSTs `json_body` to `route` and records the SSE stream it answers with.
// sent_at in the result is left for the caller.
RequestResult stream_request(const ClientOptions& options, const std::string& route, const std::string& json_body);

}  // namespace flashdraft::bench_serve
