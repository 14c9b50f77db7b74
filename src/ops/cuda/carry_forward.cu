#include <string>

#include "ops/cuda/checks.h"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"

namespace flashdraft::ops::cuda {
namespace {

// One block per fix, its threads over the fix's words. Fixes never read each
// other's words (a slot's position comes from the fix itself), so their order
// does not matter.
__global__ void carry_forward_kernel(const int32_t* __restrict__ verdicts, const int32_t* __restrict__ lag,
                                     int64_t lag_ld, const InputFix* __restrict__ fixes) {
  const InputFix f = fixes[blockIdx.x];
  const int32_t token = verdicts[2 * f.verdict + 1];
  const int32_t d = verdicts[2 * f.verdict] + (lag ? lag[f.verdict * lag_ld] : 0) + f.shift;
  for (int32_t j = threadIdx.x; j < f.count; j += blockDim.x) {
    int32_t* w = f.dst + static_cast<int64_t>(j) * f.stride;
    switch (f.kind) {
      case InputFix::kShift:
        *w += d;
        break;
      case InputFix::kToken:
        *w = token;
        break;
      case InputFix::kLag:
        *w = d;
        break;
      default: {
        const int32_t pos = f.value + d + j;
        *w = f.table[pos / f.block_size] * f.block_size + pos % f.block_size;
      }
    }
  }
}

}  // namespace

void carry_forward(const Tensor& verdicts, const Tensor& lag, const Tensor& fixes, cudaStream_t stream) {
  expect_tensor(verdicts, DType::I32, "carry_forward", "verdicts");
  expect_tensor(fixes, DType::I32, "carry_forward", "fixes");
  if (verdicts.cols != 2 || !verdicts.contiguous())
    fail("carry_forward", "verdicts must be contiguous i32 [n, 2], got " + describe(verdicts));
  if (!lag.empty()) {
    expect_tensor(lag, DType::I32, "carry_forward", "lag");
    if (lag.cols != 1 || lag.rows != verdicts.rows)
      fail("carry_forward", "lag must be i32 [verdicts.rows, 1], got " + describe(lag));
  }
  if (fixes.cols != InputFix::kWords || !fixes.contiguous() || reinterpret_cast<uintptr_t>(fixes.data) % 8 != 0)
    fail("carry_forward", "fixes must be contiguous, 8-byte aligned i32 [n, 12], got " + describe(fixes));
  if (fixes.rows == 0) return;
  carry_forward_kernel<<<static_cast<unsigned>(fixes.rows), 128, 0, stream>>>(
      verdicts.as<int32_t>(), lag.empty() ? nullptr : lag.as<int32_t>(), lag.ld, fixes.as<InputFix>());
  check(cudaGetLastError(), "carry_forward kernel launch");
}

}  // namespace flashdraft::ops::cuda
