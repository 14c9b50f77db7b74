#pragma once
// What bench serve asks a server outside the timed requests: whether it is
// there and which model it serves (GET /v1/models), and its speculative
// decoding counters (GET /metrics), read before and after a run.
#include <optional>
#include <string>

#include "bench_serve/http_client.h"
#include "bench_serve/prometheus.h"

namespace flashdraft::bench_serve {

// Checks the server answers and the key is accepted; returns `model`, or
// when empty the first id GET /v1/models lists. Throws Error with a message
// a user can act on (server not running, bad key, no model listed).
std::string probe_server(const ClientOptions& options, const std::string& model);

struct SpecScrape {
  std::optional<SpecDecodeCounters> counters;
  std::string note;  // why there are none
};

SpecScrape scrape_spec_counters(const ClientOptions& options);

}  // namespace flashdraft::bench_serve
