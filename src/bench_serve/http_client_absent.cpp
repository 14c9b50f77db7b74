// The HTTP client of a build configured without cpp-httplib: bench serve
// refuses to start (see http_client_available) instead of failing to link.
#include "bench_serve/http_client.h"

namespace flashdraft::bench_serve {
namespace {

const char* const kMissing =
    "this build has no HTTP client: cpp-httplib was not found when it was configured "
    "(apt-get install libcpp-httplib-dev, then rebuild)";

}  // namespace

bool http_client_available() { return false; }

HttpReply http_get(const ClientOptions&, const std::string&) {
  HttpReply reply;
  reply.error = kMissing;
  return reply;
}

RequestResult stream_request(const ClientOptions&, const std::string&, const std::string&) {
  RequestResult r;
  r.error = kMissing;
  return r;
}

}  // namespace flashdraft::bench_serve
