#include <cmath>

#include "ops/ops.h"

namespace flashdraft::ops::cpu {

void silu_glu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace flashdraft::ops::cpu
