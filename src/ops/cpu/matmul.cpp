#include "ops/cpu/matmul_small.h"
#include "ops/ops.h"

namespace flashdraft::ops::cpu {

// No sgemm here: it re-packs all of w on every call (half of a DFlash step's
// time went there), and a GEMM's reduction order may change with n, which
// would let a verify row's logits differ from the same row decoded alone.
// matmul_small is within ~5% of OpenBLAS sgemm even at 512 rows.
void matmul_wt(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
               int64_t out) {
  if (n <= 0 || out <= 0) return;
  matmul_small(x, w, bias, y, n, in, out);
}

}  // namespace flashdraft::ops::cpu
