#pragma once
// silu(gate) * up as silu_glu computes it, shared with the gate_up GEMM's
// fused epilogue (gemm_tiles.cu) so that a row gets the same bits whichever
// ran it. Every rounding is pinned by an intrinsic.
namespace flashdraft::ops::cuda::glu_math {

__device__ __forceinline__ float silu_times(float gate, float up) {
  return __fmul_rn(__fdiv_rn(gate, __fadd_rn(1.f, expf(-gate))), up);
}

}  // namespace flashdraft::ops::cuda::glu_math
