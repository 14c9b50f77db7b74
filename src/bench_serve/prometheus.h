#pragma once
// Reading a server's GET /metrics (Prometheus text format) for the
// speculative-decoding counters vLLM exports, so a run reports acceptance
// from the difference of a scrape before and one after:
//   vllm:spec_decode_num_drafts, vllm:spec_decode_num_draft_tokens,
//   vllm:spec_decode_num_accepted_tokens,
//   vllm:spec_decode_num_accepted_tokens_per_pos{position="i"}
// each with or without the `_total` counter suffix, summed over other labels
// (model_name, engine).
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::bench_serve {

struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Comments and lines that do not parse are skipped.
std::vector<MetricSample> parse_prometheus_text(std::string_view text);

struct SpecDecodeCounters {
  double drafts = 0, draft_tokens = 0, accepted_tokens = 0;
  std::map<int, double> accepted_per_pos;  // by draft position, 0 first
};

// nullopt when the text has none of the counters (no spec decoding, or not vLLM's names).
std::optional<SpecDecodeCounters> spec_decode_counters(const std::vector<MetricSample>& samples);

struct SpecDecodeSummary {
  double drafts = 0, draft_tokens = 0, accepted_tokens = 0;
  double acceptance_rate = 0;    // accepted / draft tokens
  double acceptance_length = 0;  // 1 + accepted / drafts: tokens a target forward yields
  std::vector<double> per_position_rate;  // accepted at position i / drafts
};

// after - before; nullopt when no draft was made in between.
std::optional<SpecDecodeSummary> spec_decode_delta(const SpecDecodeCounters& before, const SpecDecodeCounters& after);

}  // namespace flashdraft::bench_serve
