#pragma once
// Sends every prompt of a config at its arrival time (Poisson, seeded), at
// most max_concurrency in flight, each from its own thread, and collects
// what each request measured, with the spec-decode counters scraped just
// before the first request and just after the last.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_serve/bench_config.h"
#include "bench_serve/prometheus.h"
#include "bench_serve/request_result.h"

namespace flashdraft::bench_serve {

struct BenchRun {
  std::vector<RequestResult> results;  // in prompt order
  double duration = 0;                 // first request sent -> last one finished, seconds
  std::optional<SpecDecodeSummary> spec;
  std::string spec_note;  // why spec is empty
};

// Called from the calling thread about ten times a second, and once at the end.
using ProgressFn = std::function<void(size_t done, size_t failed, double elapsed_seconds)>;

BenchRun run_benchmark(const BenchConfig& config, const ProgressFn& progress);

}  // namespace flashdraft::bench_serve
