#include "bench_serve/arrivals.h"

#include <cmath>
#include <random>

namespace flashdraft::bench_serve {

std::vector<double> arrival_times(size_t count, double rate, uint64_t seed) {
  std::vector<double> times(count, 0.0);
  if (std::isinf(rate)) return times;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  for (size_t i = 1; i < count; ++i) times[i] = times[i - 1] + gap(rng);
  return times;
}

}  // namespace flashdraft::bench_serve
