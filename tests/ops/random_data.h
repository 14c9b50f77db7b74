#pragma once
// Deterministic random inputs and error measures shared by the op tests.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace flashdraft::ops::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// max |got - want| / max(max |want|, tiny): scale-aware, so one tolerance
// fits values of any size.
inline double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double max_diff = 0.0, max_ref = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i]) - want[i]));
    max_ref = std::max(max_ref, std::abs(want[i]));
  }
  return max_diff / max_ref;
}

}  // namespace flashdraft::ops::testing
