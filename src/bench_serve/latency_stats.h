#pragma once
// Mean, median and percentiles of latency samples. Percentiles interpolate
// linearly between the two nearest ranks (numpy's default), so figures match
// those of vLLM's and SGLang's benchmarks on the same samples.
#include <cstddef>
#include <optional>
#include <vector>

namespace flashdraft::bench_serve {

struct LatencySummary {
  size_t count = 0;
  double mean = 0, median = 0, p99 = 0;
};

// p in [0, 100]; `sorted` ascending and not empty.
double percentile(const std::vector<double>& sorted, double p);
// nullopt for no samples.
std::optional<LatencySummary> summarize(std::vector<double> samples);

}  // namespace flashdraft::bench_serve
