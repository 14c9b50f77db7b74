#include "bench_serve/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>

namespace flashdraft::bench_serve {
namespace {

// Insertion-ordered, so the report's keys keep the order a reader expects.
using ojson = nlohmann::ordered_json;

constexpr size_t kErrorsShown = 5;

std::string rate_text(double rate) { return std::isinf(rate) ? "inf" : fmt::format("{:g}", rate); }

std::string ms(const std::optional<LatencySummary>& s, double LatencySummary::*field) {
  return s ? fmt::format("{:.2f}", (*s).*field * 1e3) : "n/a";
}

// Counters travel as floats in Prometheus text; whole ones print as integers.
ojson count(double v) {
  return v == std::floor(v) && std::fabs(v) < 9e15 ? ojson(static_cast<int64_t>(v)) : ojson(v);
}

void put_ms(ojson& j, const char* key, const std::optional<LatencySummary>& s) {
  j[fmt::format("mean_{}_ms", key)] = s ? ojson(s->mean * 1e3) : ojson(nullptr);
  j[fmt::format("median_{}_ms", key)] = s ? ojson(s->median * 1e3) : ojson(nullptr);
  j[fmt::format("p99_{}_ms", key)] = s ? ojson(s->p99 * 1e3) : ojson(nullptr);
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

RunSummary summarize_run(const BenchRun& run) {
  RunSummary s;
  s.duration = run.duration;
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t chunks = 0;
  std::map<std::string, size_t> errors;
  for (const RequestResult& r : run.results) {
    if (!r.ok) {
      ++s.failed;
      ++errors[r.error];
      continue;
    }
    ++s.completed;
    s.input_tokens += r.prompt_tokens;
    s.output_tokens += r.output_tokens;
    s.without_usage += r.usage_reported ? 0 : 1;
    chunks += r.content_chunks;
    ttft.push_back(r.ttft);
    e2e.push_back(r.e2e);
    if (r.output_tokens > 1) tpot.push_back((r.e2e - r.ttft) / static_cast<double>(r.output_tokens - 1));
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
  }
  if (s.duration > 0) {
    s.request_throughput = static_cast<double>(s.completed) / s.duration;
    s.output_throughput = static_cast<double>(s.output_tokens) / s.duration;
    s.total_token_throughput = static_cast<double>(s.input_tokens + s.output_tokens) / s.duration;
  }
  s.ttft = summarize(std::move(ttft));
  s.tpot = summarize(std::move(tpot));
  s.itl = summarize(std::move(itl));
  s.e2e = summarize(std::move(e2e));
  if (chunks > 0) s.tokens_per_chunk = static_cast<double>(s.output_tokens) / static_cast<double>(chunks);
  s.errors.assign(errors.begin(), errors.end());
  std::stable_sort(s.errors.begin(), s.errors.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return s;
}

std::string format_report(const BenchConfig& c, const BenchRun& run, const RunSummary& s) {
  std::string out;
  auto row = [&](std::string_view label, const std::string& value) { out += fmt::format("{:<32}{}\n", label, value); };
  auto rule = [&](std::string_view title) { out += fmt::format("{:-<62}\n", fmt::format("-- {} ", title)); };
  rule("flashdraft bench serve");
  row("Server", fmt::format("{} ({})", c.client.server.url(route_of(c.endpoint)), name_of(c.endpoint)));
  row("Model", c.model);
  row("Dataset", fmt::format("{} ({} prompts, max_tokens {})", c.dataset, c.prompts.size(), c.max_tokens));
  row("Max concurrency", c.max_concurrency > 0 ? std::to_string(c.max_concurrency) : "unlimited");
  row("Request rate (req/s)", rate_text(c.request_rate));
  row("Successful requests", std::to_string(s.completed));
  row("Failed requests", std::to_string(s.failed));
  row("Duration (s)", fmt::format("{:.2f}", s.duration));
  row("Input tokens", s.without_usage == s.completed && s.completed > 0 ? "n/a (no usage)" : std::to_string(s.input_tokens));
  row("Output tokens", s.without_usage > 0 ? fmt::format("{} ({} requests counted in chunks: no usage)",
                                                         s.output_tokens, s.without_usage)
                                           : std::to_string(s.output_tokens));
  row("Request throughput (req/s)", fmt::format("{:.2f}", s.request_throughput));
  row("Output throughput (tok/s)", fmt::format("{:.2f}", s.output_throughput));
  row("Total throughput (tok/s)", fmt::format("{:.2f}", s.total_token_throughput));
  out += fmt::format("{:-<32}{:>10}{:>10}{:>10}\n", "-- latency (ms) ", "mean", "median", "p99");
  auto lat = [&](std::string_view label, const std::optional<LatencySummary>& l) {
    out += fmt::format("{:<32}{:>10}{:>10}{:>10}\n", label, ms(l, &LatencySummary::mean), ms(l, &LatencySummary::median),
                       ms(l, &LatencySummary::p99));
  };
  lat("TTFT", s.ttft);
  lat("TPOT (per token after the 1st)", s.tpot);
  lat("ITL (per chunk)", s.itl);
  lat("E2E latency", s.e2e);
  row("Tokens per chunk", s.tokens_per_chunk > 0 ? fmt::format("{:.2f}", s.tokens_per_chunk) : "n/a");
  rule("speculative decoding (server /metrics)");
  if (run.spec) {
    const SpecDecodeSummary& d = *run.spec;
    row("Acceptance rate", fmt::format("{:.1f} %", d.acceptance_rate * 100));
    row("Acceptance length", fmt::format("{:.2f}", d.acceptance_length));
    row("Drafts / draft tok / accepted", fmt::format("{:g} / {:g} / {:g}", d.drafts, d.draft_tokens, d.accepted_tokens));
    if (!d.per_position_rate.empty()) {
      std::vector<std::string> rates;
      for (double r : d.per_position_rate) rates.push_back(fmt::format("{:.2f}", r));
      row("Acceptance per position", fmt::format("{}", fmt::join(rates, " ")));
    }
  } else {
    row("Not available", run.spec_note);
  }
  if (!s.errors.empty()) {
    rule("errors");
    for (size_t i = 0; i < s.errors.size() && i < kErrorsShown; ++i)
      out += fmt::format("{:>5} x {}\n", s.errors[i].second, s.errors[i].first);
    if (s.errors.size() > kErrorsShown)
      out += fmt::format("      ... {} other messages (all in --output-json)\n", s.errors.size() - kErrorsShown);
  }
  out += std::string(62, '-') + "\n";
  return out;
}

ojson report_json(const BenchConfig& c, const BenchRun& run, const RunSummary& s) {
  ojson j;
  j["date"] = utc_now();
  j["base_url"] = c.client.server.origin() + c.client.server.prefix;
  j["endpoint"] = route_of(c.endpoint);
  j["model"] = c.model;
  j["dataset"] = c.dataset;
  j["num_prompts"] = c.prompts.size();
  j["max_concurrency"] = c.max_concurrency > 0 ? ojson(c.max_concurrency) : ojson(nullptr);
  j["request_rate"] = std::isinf(c.request_rate) ? ojson("inf") : ojson(c.request_rate);
  j["max_tokens"] = c.max_tokens;
  j["temperature"] = c.temperature;
  j["seed"] = c.seed;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["duration"] = s.duration;
  j["total_input_tokens"] = s.input_tokens;
  j["total_output_tokens"] = s.output_tokens;
  j["requests_without_usage"] = s.without_usage;
  j["request_throughput"] = s.request_throughput;
  j["output_throughput"] = s.output_throughput;
  j["total_token_throughput"] = s.total_token_throughput;
  put_ms(j, "ttft", s.ttft);
  put_ms(j, "tpot", s.tpot);
  put_ms(j, "itl", s.itl);
  put_ms(j, "e2el", s.e2e);
  j["tokens_per_chunk"] = s.tokens_per_chunk > 0 ? ojson(s.tokens_per_chunk) : ojson(nullptr);
  if (run.spec) {
    const SpecDecodeSummary& d = *run.spec;
    j["spec_decode"] = {{"num_drafts", count(d.drafts)},
                        {"num_draft_tokens", count(d.draft_tokens)},
                        {"num_accepted_tokens", count(d.accepted_tokens)},
                        {"acceptance_rate", d.acceptance_rate},
                        {"acceptance_length", d.acceptance_length},
                        {"acceptance_rate_per_position", d.per_position_rate}};
  } else {
    j["spec_decode"] = nullptr;
    j["spec_decode_note"] = run.spec_note;
  }
  j["errors"] = ojson::array();
  for (const auto& [message, count] : s.errors) j["errors"].push_back({{"message", message}, {"count", count}});
  j["requests"] = ojson::array();
  for (const RequestResult& r : run.results) {
    ojson q = {{"ok", r.ok}, {"sent_at_s", r.sent_at}, {"e2e_ms", r.e2e * 1e3}};
    if (r.ok) {
      q["ttft_ms"] = r.ttft * 1e3;
      q["prompt_tokens"] = r.prompt_tokens;
      q["output_tokens"] = r.output_tokens;
      q["chunks"] = r.content_chunks;
      ojson itl = ojson::array();
      for (double g : r.itl) itl.push_back(g * 1e3);
      q["itl_ms"] = std::move(itl);
    } else {
      q["error"] = r.error;
    }
    j["requests"].push_back(std::move(q));
  }
  return j;
}

}  // namespace flashdraft::bench_serve
