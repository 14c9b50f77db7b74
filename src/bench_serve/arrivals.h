#pragma once
// When each request of a run is sent: a Poisson process of `rate` requests
// per second (independent exponential gaps, seeded), or all at once when the
// rate is infinite. Concurrency limits may delay a request past its time.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace flashdraft::bench_serve {

// Seconds from the start of the run, non-decreasing; the first request is
// sent at 0. rate > 0 (may be +inf).
std::vector<double> arrival_times(size_t count, double rate, uint64_t seed);

}  // namespace flashdraft::bench_serve
