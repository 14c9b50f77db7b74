#pragma once
// The arithmetic of one head's q/k norm and RoPE, shared by rope_store_kv and
// the qkv GEMM's fused epilogue (gemm_tiles.cu), so that a row gets the same
// bits whichever of the two ran it (a decode row takes the fused path, the
// same row inside a prefill chunk the separate kernel: batch invariance).
// A warp holds one head of head_dim = 32 E elements, lane l the E
// consecutive elements from E l; every rounding is pinned by an intrinsic,
// so the compiler cannot contract the two call sites differently.
#include "ops/cuda/common.cuh"

namespace flashdraft::ops::cuda::rope_math {

// cos and sin of position * inv_freq (the f32 product, as Hugging Face forms
// the angle), times rope scaling's attention factor. sincosf is the accurate
// libdevice one: at positions in the tens of thousands the angle is large and
// a fast __sinf would drift.
__device__ __forceinline__ void cos_sin(float position, float inv_freq, float factor, float& c, float& s) {
  float sn, cs;
  sincosf(__fmul_rn(position, inv_freq), &sn, &cs);
  c = __fmul_rn(cs, factor);
  s = __fmul_rn(sn, factor);
}

// The norm's sum of squares: a lane adds its elements' squares in order
// (from 0), the warp's butterfly adds the lanes', and the factor is
// 1 / sqrt(total / head_dim + eps).
template <int E>
__device__ __forceinline__ float add_squares(const float (&x)[E], float sum) {
#pragma unroll
  for (int i = 0; i < E; ++i) sum = __fmaf_rn(x[i], x[i], sum);
  return sum;
}
__device__ __forceinline__ float rms_factor(float lane_sum, int head_dim, float eps) {
  return rsqrtf(__fadd_rn(__fdiv_rn(warp_sum(lane_sum), static_cast<float>(head_dim)), eps));
}

__device__ __forceinline__ float normed(float x, float scale, float w) { return __fmul_rn(__fmul_rn(x, scale), w); }

// The neox rotation of the pair (a at i, b at i + head_dim / 2).
__device__ __forceinline__ float rotated_first(float a, float b, float c, float s) {
  return __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
}
__device__ __forceinline__ float rotated_second(float a, float b, float c, float s) {
  return __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
}

}  // namespace flashdraft::ops::cuda::rope_math
