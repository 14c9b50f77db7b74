#pragma once
// What one benchmark request measured. Times in seconds.
#include <cstdint>
#include <string>
#include <vector>

namespace flashdraft::bench_serve {

struct RequestResult {
  bool ok = false;
  std::string error;  // why it failed (empty when ok)
  double ttft = 0;    // request sent -> first chunk with generated output
  double e2e = 0;     // request sent -> end of the stream
  // Gaps between consecutive chunks that carry output. One chunk may carry
  // several tokens (speculative decoding emits a whole accepted draft at
  // once), so these are per chunk, not per token; TPOT is the per-token figure.
  std::vector<double> itl;
  int64_t content_chunks = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;    // usage.completion_tokens, else content_chunks
  bool usage_reported = false;  // the server sent usage (stream_options.include_usage)
  double sent_at = 0;           // since the start of the run
};

}  // namespace flashdraft::bench_serve
