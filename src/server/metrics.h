#pragma once
// GET /metrics: Prometheus text format with vLLM's metric names (the `vllm:`
// prefix, counters with `_total`, a model_name label), so dashboards and
// benchmark tools written for vLLM read them unchanged. Thread-safe.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/spec_stats.h"

namespace flashdraft::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // The _bucket (cumulative, le="+Inf" last), _sum and _count lines.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket, not cumulative; one more for +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

// A request when it finished.
struct FinishedRequest {
  double ttft_seconds = 0;  // arrival to first token (0 if none came)
  double e2e_seconds = 0;   // arrival to finish
  int64_t generation_tokens = 0;
  std::string finish_reason;  // stop, length, abort, error
  int64_t preemptions = 0;
  engine::SpecStats spec;
};

class Metrics {
 public:
  explicit Metrics(std::string model_name);

  // A request is waiting from its submission to its first token, then
  // running until it finishes (preempted requests count as running).
  void request_submitted();
  void request_started();
  void add_prompt_tokens(int64_t n);
  void add_generation_tokens(int64_t n);
  // Ends what request_submitted began; `started`: request_started was called.
  void record(const FinishedRequest& request, bool started);

  // kv_cache_usage: fraction of KV blocks in use, 0..1.
  std::string render(double kv_cache_usage) const;

 private:
  std::string labels() const;  // model_name="..."

  const std::string model_name_;
  mutable std::mutex mu_;
  int64_t running_ = 0, waiting_ = 0;
  int64_t prompt_tokens_ = 0, generation_tokens_ = 0, preemptions_ = 0;
  std::map<std::string, int64_t> finished_;  // by finish reason
  engine::SpecStats spec_;
  Histogram ttft_, tpot_, e2e_;
};

}  // namespace flashdraft::server
