#include "bench_serve/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace flashdraft::bench_serve {

double percentile(const std::vector<double>& sorted, double p) {
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * frac;
}

std::optional<LatencySummary> summarize(std::vector<double> samples) {
  if (samples.empty()) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  LatencySummary s;
  s.count = samples.size();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  s.median = percentile(samples, 50);
  s.p99 = percentile(samples, 99);
  return s;
}

}  // namespace flashdraft::bench_serve
