#include "ops/ops.h"

namespace flashdraft::ops::cpu {

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

}  // namespace flashdraft::ops::cpu
