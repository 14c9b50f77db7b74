#pragma once
// The arithmetic of every forward-path GEMM of the CUDA backend, in one place.
//
// Why: greedy DFlash must give exactly plain greedy output, and the engine
// mixes a request's rows with other requests' rows, verify blocks and prefill
// chunks in one call. So y[m, n] must be bit-identical whatever M is and
// whichever rows share the call. Kernels of different shapes (a weight
// streamer for a few rows, tiles for prefill, split over K or not) may all
// compute it, but each must follow this rule for every output element:
//
//  1. The chain. K is cut into 32-wide blocks b = 0, 1, ... (the last one
//     zero-padded; blocks starting at or past K do not exist). A block is
//     two mma.sync.m16n8k16 (bf16 in, f32 accumulate), with its 32 k's laid
//     into the fragments by mma_block32() below, always x as the A operand
//     and w as the B operand. The only other matrix instruction is wgmma
//     fed the same k's (wgmma_n128() below), which gives the same bits.
//  2. The slices. Blocks are grouped into slices of `slice` k's (a multiple of
//     kTileK, chosen per weight shape by gemm_slice(), never per M). Each
//     slice's partial starts from +0 and chains its blocks in ascending order.
//  3. The fold. y = finish(fold(...fold(fold(p_0, p_1), p_2)..., p_last)):
//     partials added left to right in f32 by fold(), then finish() adds the
//     bias and rounds once. Both are __fadd_rn / explicit conversions, so no
//     compiler can contract them into something else in one kernel and not
//     in another.
//
// An element's arithmetic then depends only on its row of x, its row of w,
// K and the slice length; padded rows and columns never reach it (an mma's
// rows and columns are independent dot products).
#include <cuda_bf16.h>

#include <cstdint>

#include "ops/cuda/wgmma.cuh"

namespace flashdraft::ops::cuda::gemm {

// k's per pipeline tile of the kernels (two chain blocks); slices are whole tiles.
constexpr int kTileK = 64;
constexpr int kBlockK = 32;

// d += a · b for one m16n8k16 fragment set (PTX ISA "mma.m16n8k16", .row.col).
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One chain block: acc += x[16 rows, 32 k] · w[8 rows, 32 k]^T. Lane (g =
// lane / 4, q = lane % 4) brings 16 bytes of each operand: a_lo = x row g,
// a_hi = x row g + 8, b = w row g, each the 8 consecutive k's [8q, 8q + 8) of
// the block, so every operand is one 16-byte load. The first mma takes k's
// 8q + {0..3}, the second 8q + {4..7} (A and B alike, so the product is the
// right dot product; only the order of its terms is this file's choice).
// Accumulator: acc[0..1] = (row g, cols 2q, 2q+1), acc[2..3] = (row g+8, same).
__device__ __forceinline__ void mma_block32(float (&acc)[4], const uint4& a_lo, const uint4& a_hi, const uint4& b) {
  mma16816(acc, a_lo.x, a_hi.x, a_lo.y, a_hi.y, b.x, b.y);
  mma16816(acc, a_lo.z, a_hi.z, a_lo.w, a_hi.w, b.z, b.w);
}

// Where mma_block32 puts a block's k's: the k of logical position L (0..15,
// the PTX fragment order: a0/b0 hold L = 2q, 2q+1, a2/b1 hold L = 2q+8,
// 2q+9) of its first mma (half 0) or second (half 1). A tiled weight
// (matmul_tiles.h) is stored in this order, so that ldmatrix and wgmma read
// the same fragments from it. (Measured on H100, bench/wgmma_probe.cu:
// wgmma.m64nNk16 fed these k's gives the chain's bits exactly; the order of
// the 16 k's inside one mma does not change its bits either.)
__host__ __device__ constexpr int chain_k(int half, int logical) {
  return 8 * ((logical % 8) / 2) + (logical >= 8 ? 2 : 0) + logical % 2 + 4 * half;
}

// wgmma.m64n128k16, f32 += bf16 x bf16, over the same chain: A (a warp's 16
// rows of the warpgroup's 64) from registers in mma_block32's fragment order
// (a0..a3 of one of its two mmas), B by a shared-memory descriptor over a
// tiled weight's half (matmul_tiles.h: core matrices 128 bytes apart along k,
// 256 along n), each half holding that mma's 16 k's (chain_k). Same bits as
// the mma.sync chain (bench/wgmma_probe.cu). Only sm_90a has wgmma
// (FD_HAVE_WGMMA, wgmma.cuh).
#if FD_HAVE_WGMMA || !defined(__CUDA_ARCH__)
__device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr) {
  return wgmma::desc(addr, 128, 256, 0);  // no swizzle; core matrices 128 bytes apart along k, 256 along n
}
__device__ __forceinline__ void wgmma_n128(float (&d)[64], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                           uint64_t b) {
  wgmma::m64n128k16_rs<0>(d, a0, a1, a2, a3, b);
}
#endif

// total <- total + partial (the fold of rule 3; the first partial is taken as is).
__device__ __forceinline__ float fold(float total, float partial) { return __fadd_rn(total, partial); }

// The epilogue of rule 3: optional bias (f32 or bf16), one rounding to Y.
template <class Y>
__device__ __forceinline__ Y finish(float total, const void* bias, bool bias_f32, int n);
template <>
__device__ __forceinline__ float finish<float>(float total, const void* bias, bool bias_f32, int n) {
  if (bias)
    total = __fadd_rn(total, bias_f32 ? static_cast<const float*>(bias)[n]
                                      : __bfloat162float(static_cast<const __nv_bfloat16*>(bias)[n]));
  return total;
}
template <>
__device__ __forceinline__ __nv_bfloat16 finish<__nv_bfloat16>(float total, const void* bias, bool bias_f32, int n) {
  return __float2bfloat16_rn(finish<float>(total, bias, bias_f32, n));
}

}  // namespace flashdraft::ops::cuda::gemm
