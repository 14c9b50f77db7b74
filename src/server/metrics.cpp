#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>

namespace flashdraft::server {
namespace {

// vLLM's bucket bounds, so histograms compare across servers.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,   0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTpotBuckets = {0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,  0.3,  0.4, 0.5,
                                          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kE2eBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,    10.0,  15.0,  20.0,
                                         30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// Label values escape backslash, quote and newline.
std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

std::string number(double v) { return fmt::format("{}", v); }

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, le, cumulative);
  }
  out += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, number(sum_), name, labels, count_);
}

Metrics::Metrics(std::string model_name)
    : model_name_(std::move(model_name)), ttft_(kTtftBuckets), tpot_(kTpotBuckets), e2e_(kE2eBuckets) {}

std::string Metrics::labels() const { return fmt::format("model_name=\"{}\"", escape_label(model_name_)); }

void Metrics::request_submitted() {
  std::lock_guard lock(mu_);
  ++waiting_;
}

void Metrics::request_started() {
  std::lock_guard lock(mu_);
  --waiting_;
  ++running_;
}

void Metrics::add_prompt_tokens(int64_t n) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += n;
}

void Metrics::add_generation_tokens(int64_t n) {
  std::lock_guard lock(mu_);
  generation_tokens_ += n;
}

void Metrics::record(const FinishedRequest& r, bool started) {
  std::lock_guard lock(mu_);
  --(started ? running_ : waiting_);
  ++finished_[r.finish_reason];
  preemptions_ += r.preemptions;
  spec_.merge(r.spec);
  if (r.generation_tokens > 0) ttft_.observe(r.ttft_seconds);
  if (r.generation_tokens > 1) {
    tpot_.observe((r.e2e_seconds - r.ttft_seconds) / static_cast<double>(r.generation_tokens - 1));
  }
  e2e_.observe(r.e2e_seconds);
}

std::string Metrics::render(double kv_cache_usage) const {
  std::lock_guard lock(mu_);
  const std::string l = labels();
  std::string out;
  auto gauge = [&](const char* name, const char* help, const std::string& value) {
    header(out, name, "gauge", help);
    out += fmt::format("{}{{{}}} {}\n", name, l, value);
  };
  auto counter = [&](const std::string& name, const char* help, int64_t value) {
    header(out, name, "counter", help);
    out += fmt::format("{}_total{{{}}} {}\n", name, l, value);
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.", number(running_));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", number(waiting_));
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", number(kv_cache_usage));
  // The name vLLM used before kv_cache_usage_perc; older dashboards read it.
  gauge("vllm:gpu_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", number(kv_cache_usage));
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.", prompt_tokens_);
  counter("vllm:generation_tokens", "Number of generation tokens processed.", generation_tokens_);
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", preemptions_);
  header(out, "vllm:request_success", "counter", "Count of successfully processed requests.");
  for (const char* reason : {"stop", "length", "abort", "error"}) {
    auto it = finished_.find(reason);
    out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", l, reason,
                       it == finished_.end() ? 0 : it->second);
  }
  counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", spec_.drafts());
  counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", spec_.draft_tokens());
  counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", spec_.accepted_tokens());
  header(out, "vllm:spec_decode_num_accepted_tokens_per_pos", "counter", "Accepted tokens per draft position.");
  for (size_t i = 0; i < spec_.accepted_at().size(); ++i) {
    out += fmt::format("vllm:spec_decode_num_accepted_tokens_per_pos_total{{{},position=\"{}\"}} {}\n", l, i,
                       spec_.accepted_at()[i]);
  }
  // Adaptive speculation's choices: one observation per decode step of a
  // request, its draft length (0: it decoded without drafting). vLLM has no
  // such metric, hence flashdraft's prefix.
  const std::string lengths = "flashdraft:spec_decode_draft_length";
  header(out, lengths, "histogram", "Histogram of the draft length chosen per request and decode step.");
  const auto& by_length = spec_.draft_lengths();
  int64_t cumulative = 0, total = 0;
  for (size_t k = 0; k < std::max<size_t>(by_length.size(), 16); ++k) {
    cumulative += k < by_length.size() ? by_length[k] : 0;
    total += k < by_length.size() ? static_cast<int64_t>(k) * by_length[k] : 0;
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", lengths, l, k, cumulative);
  }
  out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", lengths, l, cumulative,
                     lengths, l, total, lengths, l, cumulative);
  header(out, "vllm:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.");
  ttft_.render(out, "vllm:time_to_first_token_seconds", l);
  header(out, "vllm:time_per_output_token_seconds", "histogram", "Histogram of time per output token in seconds.");
  tpot_.render(out, "vllm:time_per_output_token_seconds", l);
  header(out, "vllm:e2e_request_latency_seconds", "histogram", "Histogram of end to end request latency in seconds.");
  e2e_.render(out, "vllm:e2e_request_latency_seconds", l);
  return out;
}

}  // namespace flashdraft::server
