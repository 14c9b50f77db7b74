#pragma once
// The arithmetic that merges a row's splits (attention_splits.h), shared by
// the paged attention kernel, which folds a CTA's own splits in registers,
// and the split reduce, which folds the partials of several CTAs: one
// definition, so both give the same bits.
#include <cmath>

namespace flashdraft::ops::cuda {

constexpr float kNegInf = -INFINITY;

// ex2.approx of -inf is +0, which the masking relies on.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The split merge: a left fold over a row's splits in ascending key order.
// State (m_acc, l_acc, acc[]) starts at (-inf, 0, 0); a split with running
// max m and sum l (m -inf: the row saw none of its keys) folds in with
// weights a (old state) and b (split). Every rounding is pinned
// by an intrinsic so no compiler contraction can differ between the kernels.
__device__ __forceinline__ float fold_acc(float acc, float a, float x, float b) {
  return __fmaf_rn(acc, a, __fmul_rn(x, b));
}
// The weights of a non-empty split of max m folding into a state of max
// m_acc: a for the state (0 for the first non-empty split), b for the split;
// returns the new max. (The reduce's scan path takes them from here too.)
__device__ __forceinline__ float split_weights(float m_acc, float m, float& a, float& b) {
  const float mn = fmaxf(m_acc, m);
  a = fast_exp2(__fsub_rn(m_acc, mn));
  b = fast_exp2(__fsub_rn(m, mn));
  return mn;
}
__device__ __forceinline__ bool fold_weights(float& m_acc, float& l_acc, float m, float l, float& a, float& b) {
  if (m == kNegInf) return false;  // an empty split changes nothing
  m_acc = split_weights(m_acc, m, a, b);
  l_acc = fold_acc(l_acc, a, l, b);
  return true;
}
// The output acc / l_acc as acc times inv_l = __frcp_rn(l_acc), which the
// caller computes once per row (each __frcp_rn is a dozen instructions with a
// slow path: per element it took 11% of a prefill call's warp samples).
__device__ __forceinline__ float fold_result(float acc, float l_acc, float inv_l) {
  return l_acc > 0.f ? __fmul_rn(acc, inv_l) : 0.f;
}

}  // namespace flashdraft::ops::cuda
