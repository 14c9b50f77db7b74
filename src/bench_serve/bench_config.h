#pragma once
// Everything one `bench serve` run needs, resolved from the flags.
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_serve/datasets.h"
#include "bench_serve/http_client.h"

namespace flashdraft::bench_serve {

enum class Endpoint { completions, chat };

const char* route_of(Endpoint e);  // /v1/completions or /v1/chat/completions
const char* name_of(Endpoint e);   // completions or chat

struct BenchConfig {
  ClientOptions client;
  Endpoint endpoint = Endpoint::completions;
  std::string model;
  std::string dataset;  // as given, for the report
  std::vector<BenchPrompt> prompts;
  int64_t max_tokens = 128;
  double temperature = 0;
  bool ignore_eos = false;
  nlohmann::json extra_body;     // an object merged into every request body, or null
  int64_t max_concurrency = 0;   // requests in flight at most; 0: no limit
  double request_rate = INFINITY;  // requests per second (Poisson); inf: all at once
  uint64_t seed = 0;
};

}  // namespace flashdraft::bench_serve
