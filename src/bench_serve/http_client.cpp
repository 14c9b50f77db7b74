#include "bench_serve/http_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>

#include "bench_serve/stream_chunk.h"
#include "bench_serve/stream_recorder.h"

namespace flashdraft::bench_serve {
namespace {

constexpr time_t kConnectTimeoutSeconds = 10;
constexpr size_t kMaxErrorBody = 64 * 1024;

httplib::Client make_client(const ClientOptions& options) {
  httplib::Client client(options.server.origin());
  client.set_connection_timeout(kConnectTimeoutSeconds);
  client.set_read_timeout(std::chrono::duration<double>(options.timeout));
  client.set_write_timeout(std::chrono::duration<double>(options.timeout));
  // Compressed streams would arrive in bursts and skew the timings.
  client.set_decompress(false);
  if (!options.api_key.empty()) client.set_bearer_token_auth(options.api_key);
  return client;
}

std::string transport_error(const ClientOptions& options, httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return fmt::format("cannot connect to {} (connection refused or host unreachable)", options.server.origin());
    case httplib::Error::ConnectionTimeout:
      return fmt::format("cannot connect to {} (timed out after {} s)", options.server.origin(), kConnectTimeoutSeconds);
    case httplib::Error::Read:
      return fmt::format("reading the answer failed (connection closed, or no byte for {} s: see --timeout)",
                         options.timeout);
    case httplib::Error::Write:
      return "sending the request failed (connection closed)";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification:
    case httplib::Error::SSLLoadingCerts:
      return fmt::format("TLS with {} failed ({})", options.server.origin(), httplib::to_string(e));
    default:
      return fmt::format("HTTP client error: {}", httplib::to_string(e));
  }
}

std::string http_error(int status, const std::string& body) {
  return fmt::format("HTTP {}: {}", status, error_message_of(body));
}

}  // namespace

bool http_client_available() { return true; }

HttpReply http_get(const ClientOptions& options, const std::string& route) {
  HttpReply reply;
  httplib::Client client = make_client(options);
  httplib::Result res = client.Get(options.server.prefix + route, httplib::Headers{{"Accept-Encoding", "identity"}});
  if (!res) {
    reply.error = transport_error(options, res.error());
    return reply;
  }
  reply.status = res->status;
  reply.body = std::move(res->body);
  return reply;
}

RequestResult stream_request(const ClientOptions& options, const std::string& route, const std::string& json_body) {
  httplib::Client client = make_client(options);
  httplib::Request req;
  req.method = "POST";
  req.path = options.server.prefix + route;
  req.headers = {{"Accept", "text/event-stream"}, {"Accept-Encoding", "identity"}, {"Content-Type", "application/json"}};
  req.body = json_body;

  int status = 0;
  bool event_stream = false;
  std::string content_type, error_body;
  const Clock::time_point sent = Clock::now();
  StreamRecorder recorder(sent);
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    content_type = res.get_header_value("Content-Type");
    event_stream = content_type.rfind("text/event-stream", 0) == 0;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status == 200 && event_stream) {
      recorder.on_bytes(Clock::now(), std::string_view(data, n));
    } else if (error_body.size() < kMaxErrorBody) {
      error_body.append(data, std::min(n, kMaxErrorBody - error_body.size()));
    }
    return true;
  };

  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent_ok = client.send(req, res, err);
  const Clock::time_point end = Clock::now();
  if (status != 0 && status != 200) {
    RequestResult r;
    r.e2e = std::chrono::duration<double>(end - sent).count();
    r.error = http_error(status, error_body);
    return r;
  }
  if (status == 200 && !event_stream) {
    RequestResult r;
    r.e2e = std::chrono::duration<double>(end - sent).count();
    r.error = fmt::format("the server answered without streaming (Content-Type: {}); bench serve needs SSE",
                          content_type.empty() ? "none" : content_type);
    return r;
  }
  return recorder.finish(end, sent_ok ? "" : transport_error(options, err));
}

}  // namespace flashdraft::bench_serve
