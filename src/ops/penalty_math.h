#pragma once
// The arithmetic of Backend::penalize (ops/backend.h), written once for host
// and device: IEEE single operations with round-to-nearest, spelled as
// intrinsics on the device (sample_math's helpers) so that nvcc cannot fuse
// them, which makes a penalised logit the same bits on every backend. Host
// code that includes this must be compiled with -ffp-contract=off.
#include <cstdint>

#include "ops/sample_math.h"

namespace flashdraft::ops::penalty_math {

FD_SAMPLE_FN float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// One logit l of token t: bias b (logit_bias), then the penalties of a
// token `seen` in prompt or output that the output holds `count` times.
FD_SAMPLE_FN float penalized(float l, float bias, bool seen, int32_t count, float repetition, float frequency,
                             float presence) {
  l = sample_math::add_rn(l, bias);
  if (seen) l = l > 0.0f ? div_rn(l, repetition) : sample_math::mul_rn(l, repetition);
  if (count > 0) {
    l = sample_math::add_rn(l, -sample_math::mul_rn(frequency, static_cast<float>(count)));
    l = sample_math::add_rn(l, -presence);
  }
  return l;
}

// Item words of Backend::penalize's `items` tensor.
inline constexpr int kItemWords = 3;  // token, output count (-1: not seen), bias (f32 bits)

}  // namespace flashdraft::ops::penalty_math
