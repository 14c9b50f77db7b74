#include <cmath>

#include "ops/ops.h"

namespace flashdraft::ops::cpu {

void rmsnorm(const float* x, const float* weight, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    // Double accumulation: the mean of squares over thousands of elements is
    // where fp32 would drift from the reference.
    double sum_sq = 0.0;
    for (int64_t i = 0; i < dim; ++i) sum_sq += static_cast<double>(xr[i]) * xr[i];
    const float mean_sq = static_cast<float>(sum_sq / static_cast<double>(dim));
    const float inv_rms = static_cast<float>(1.0 / std::sqrt(static_cast<double>(mean_sq + eps)));
    // Same order as HF: normalise, then scale by the weight.
    for (int64_t i = 0; i < dim; ++i) yr[i] = weight[i] * (xr[i] * inv_rms);
  }
}

}  // namespace flashdraft::ops::cpu
