#include <cblas.h>

#include "ops/ops.h"

namespace flashdraft::ops::cpu {

void set_num_threads(int n) {
  if (n > 0) openblas_set_num_threads(n);
}

int num_threads() { return openblas_get_num_threads(); }

}  // namespace flashdraft::ops::cpu
