#include <algorithm>
#include <string>

#include "core/error.h"
#include "ops/ops.h"

namespace flashdraft::ops::cpu {

void embedding(const float* table, int64_t vocab, int64_t dim, const int32_t* ids, int64_t n,
               float* out) {
  for (int64_t r = 0; r < n; ++r) {
    const int64_t id = ids[r];
    if (id < 0 || id >= vocab)
      throw Error("token id " + std::to_string(id) + " at position " + std::to_string(r) +
                  " is outside the model's vocabulary [0, " + std::to_string(vocab) + ")");
    std::copy(table + id * dim, table + (id + 1) * dim, out + r * dim);
  }
}

}  // namespace flashdraft::ops::cpu
