#include <cmath>
#include <vector>

#include "ops/ops.h"

namespace flashdraft::ops::cpu {

void rope_base_powers(double theta, int64_t head_dim, float* powers) {
  // HF: base ** (arange(0, d, 2).float() / d), every step in float32. pow is
  // evaluated in double and rounded once, which is what torch's float32 pow
  // achieves up to its last bit.
  const float base = static_cast<float>(theta);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    powers[i] = static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
}

void rope_inv_freq(double theta, int64_t head_dim, float* inv_freq) {
  rope_base_powers(theta, head_dim, inv_freq);
  for (int64_t i = 0; i < head_dim / 2; ++i) inv_freq[i] = 1.0f / inv_freq[i];
}

void rope_neox(float* x, const int64_t* positions, const float* inv_freq, int64_t rows,
               int64_t heads, int64_t head_dim, float attention_factor) {
  const int64_t half = head_dim / 2;
  std::vector<float> cos_v(half), sin_v(half);
  for (int64_t r = 0; r < rows; ++r) {
    // The angle is a float32 product, as in HF (inv_freq @ position_ids in
    // float32); cos/sin of that float are then exact to rounding, and scaled
    // in float32 as HF scales them (cos() * attention_scaling).
    const float pos = static_cast<float>(positions[r]);
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(pos * inv_freq[i]);
      cos_v[i] = static_cast<float>(std::cos(angle)) * attention_factor;
      sin_v[i] = static_cast<float>(std::sin(angle)) * attention_factor;
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (r * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cos_v[i] - b * sin_v[i];
        v[i + half] = b * cos_v[i] + a * sin_v[i];
      }
    }
  }
}

}  // namespace flashdraft::ops::cpu
