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

// y[n, out] = x[n, in] · w[out, in]^T (+ bias), in double: the reference for matmul_wt.
inline std::vector<double> naive_matmul_wt(const std::vector<float>& x, const std::vector<float>& w, const float* bias,
                                           int64_t n, int64_t in, int64_t out) {
  std::vector<double> y(static_cast<size_t>(n * out));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias ? bias[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += static_cast<double>(x[r * in + i]) * w[o * in + i];
      y[r * out + o] = acc;
    }
  return y;
}

}  // namespace flashdraft::ops::testing
