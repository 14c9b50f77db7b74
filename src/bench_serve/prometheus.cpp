#include "bench_serve/prometheus.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>

namespace flashdraft::bench_serve {
namespace {

constexpr int kMaxPosition = 1024;  // far beyond any draft length; a bigger label is garbage

bool name_char(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

void skip_blanks(std::string_view s, size_t& at) {
  while (at < s.size() && (s[at] == ' ' || s[at] == '\t')) ++at;
}

// {a="x",b="y\"z"} starting at s[at] == '{'; false when malformed.
bool parse_labels(std::string_view s, size_t& at, std::map<std::string, std::string>& labels) {
  ++at;
  while (true) {
    skip_blanks(s, at);
    if (at < s.size() && s[at] == '}') {
      ++at;
      return true;
    }
    size_t start = at;
    while (at < s.size() && name_char(s[at], at == start)) ++at;
    std::string key(s.substr(start, at - start));
    skip_blanks(s, at);
    if (key.empty() || at + 1 >= s.size() || s[at] != '=' || s[at + 1] != '"') return false;
    at += 2;
    std::string value;
    while (at < s.size() && s[at] != '"') {
      if (s[at] == '\\' && at + 1 < s.size()) {
        ++at;
        value += s[at] == 'n' ? '\n' : s[at];
      } else {
        value += s[at];
      }
      ++at;
    }
    if (at >= s.size()) return false;
    ++at;  // closing quote
    labels[key] = std::move(value);
    skip_blanks(s, at);
    if (at < s.size() && s[at] == ',') ++at;
  }
}

std::optional<double> parse_value(std::string_view token) {
  std::string text(token);  // strtod reads +Inf, NaN and exponents as Prometheus writes them
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

std::optional<MetricSample> parse_line(std::string_view line) {
  size_t at = 0;
  skip_blanks(line, at);
  if (at >= line.size() || line[at] == '#') return std::nullopt;
  MetricSample sample;
  const size_t start = at;
  while (at < line.size() && name_char(line[at], at == start)) ++at;
  sample.name = std::string(line.substr(start, at - start));
  if (sample.name.empty()) return std::nullopt;
  if (at < line.size() && line[at] == '{' && !parse_labels(line, at, sample.labels)) return std::nullopt;
  skip_blanks(line, at);
  size_t end = at;
  while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
  auto value = parse_value(line.substr(at, end - at));  // a timestamp may follow
  if (!value) return std::nullopt;
  sample.value = *value;
  return sample;
}

bool is_counter(const std::string& name, std::string_view base) {
  return name == base || (name.size() == base.size() + 6 && name.compare(0, base.size(), base) == 0 &&
                          name.compare(base.size(), 6, "_total") == 0);
}

}  // namespace

std::vector<MetricSample> parse_prometheus_text(std::string_view text) {
  std::vector<MetricSample> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (auto s = parse_line(line)) out.push_back(std::move(*s));
    at = end + 1;
  }
  return out;
}

std::optional<SpecDecodeCounters> spec_decode_counters(const std::vector<MetricSample>& samples) {
  SpecDecodeCounters c;
  bool found = false;
  for (const MetricSample& s : samples) {
    if (is_counter(s.name, "vllm:spec_decode_num_drafts")) {
      c.drafts += s.value;
    } else if (is_counter(s.name, "vllm:spec_decode_num_draft_tokens")) {
      c.draft_tokens += s.value;
    } else if (is_counter(s.name, "vllm:spec_decode_num_accepted_tokens")) {
      c.accepted_tokens += s.value;
    } else if (is_counter(s.name, "vllm:spec_decode_num_accepted_tokens_per_pos")) {
      auto pos = s.labels.find("position");
      int p = -1;
      if (pos == s.labels.end()) continue;
      const std::string& v = pos->second;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), p);
      if (ec != std::errc() || ptr != v.data() + v.size() || p < 0 || p >= kMaxPosition) continue;
      c.accepted_per_pos[p] += s.value;
    } else {
      continue;
    }
    found = true;
  }
  if (!found) return std::nullopt;
  return c;
}

std::optional<SpecDecodeSummary> spec_decode_delta(const SpecDecodeCounters& before, const SpecDecodeCounters& after) {
  SpecDecodeSummary d;
  d.drafts = after.drafts - before.drafts;
  d.draft_tokens = after.draft_tokens - before.draft_tokens;
  d.accepted_tokens = after.accepted_tokens - before.accepted_tokens;
  if (d.drafts <= 0) return std::nullopt;
  d.acceptance_rate = d.draft_tokens > 0 ? d.accepted_tokens / d.draft_tokens : 0;
  d.acceptance_length = 1 + d.accepted_tokens / d.drafts;
  if (!after.accepted_per_pos.empty()) {
    d.per_position_rate.assign(after.accepted_per_pos.rbegin()->first + 1, 0.0);
    for (const auto& [pos, n] : after.accepted_per_pos) {
      auto b = before.accepted_per_pos.find(pos);
      d.per_position_rate[pos] = (n - (b == before.accepted_per_pos.end() ? 0 : b->second)) / d.drafts;
    }
  }
  return d;
}

}  // namespace flashdraft::bench_serve
