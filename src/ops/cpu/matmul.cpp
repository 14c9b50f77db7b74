#include <cblas.h>

#include <algorithm>

#include "ops/ops.h"

namespace flashdraft::ops::cpu {

void matmul_wt(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
               int64_t out) {
  if (n <= 0 || out <= 0) return;
  // With a bias, seed y with it and let the GEMM accumulate (beta = 1).
  float beta = 0.0f;
  if (bias != nullptr) {
    for (int64_t r = 0; r < n; ++r) std::copy(bias, bias + out, y + r * out);
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n),
              static_cast<blasint>(out), static_cast<blasint>(in), 1.0f, x,
              static_cast<blasint>(in), w, static_cast<blasint>(in), beta, y,
              static_cast<blasint>(out));
}

}  // namespace flashdraft::ops::cpu
