#pragma once
// The figures of a run, as a text table (stdout) and as JSON (--output-json):
// request and token throughput; TTFT, TPOT, ITL and end-to-end latency (mean,
// median, p99); acceptance from the server's /metrics; errors grouped by
// message. JSON keys follow vLLM's bench (mean_ttft_ms, p99_itl_ms, ...) so
// scripts written for it read ours.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench_serve/bench_config.h"
#include "bench_serve/latency_stats.h"
#include "bench_serve/load_runner.h"

namespace flashdraft::bench_serve {

struct RunSummary {
  size_t completed = 0, failed = 0;
  double duration = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  size_t without_usage = 0;  // completed requests whose output was counted in chunks
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  // Seconds. TPOT per request: (e2e - ttft) / (output tokens - 1), requests
  // with more than one token; ITL: every gap of every completed request.
  std::optional<LatencySummary> ttft, tpot, itl, e2e;
  double tokens_per_chunk = 0;  // > 1 when chunks carry several tokens (speculative decoding)
  std::vector<std::pair<std::string, size_t>> errors;  // message, count; most frequent first
};

RunSummary summarize_run(const BenchRun& run);

std::string format_report(const BenchConfig& config, const BenchRun& run, const RunSummary& summary);
nlohmann::ordered_json report_json(const BenchConfig& config, const BenchRun& run, const RunSummary& summary);

}  // namespace flashdraft::bench_serve
