#include "ops/ops.h"

namespace flashdraft::ops::cpu {

void add(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace flashdraft::ops::cpu
