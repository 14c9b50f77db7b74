#pragma once
// The warpgroup matrix instructions (wgmma, sm_90a only) that more than one
// kernel of this folder issues, and the shared-memory descriptors they read.
//
// Only the sm_90a device pass has wgmma. The wrappers are declared for it and
// for the host pass (which compiles no device bodies); FD_HAVE_WGMMA says
// whether a device pass may call them, and kernels keep an mma.sync path of
// the same arithmetic for the other passes. (wgmma.m64nNk16 fed the k's of an
// mma.sync.m16n8k16 chain gives that chain's f32 bits, whichever operand
// comes from registers: bench/wgmma_probe.cu, bench/gemm_notes.md.)
#include <cstdint>

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FD_HAVE_WGMMA 1
#else
#define FD_HAVE_WGMMA 0
#endif

namespace flashdraft::ops::cuda::wgmma {

#if FD_HAVE_WGMMA || !defined(__CUDA_ARCH__)
// A shared-memory operand's descriptor (the PTX ISA's "matrix descriptor"):
// its address, the byte offsets lbo and sbo between core matrices, and the
// layout type (0: no swizzle, 1: 128-byte swizzle).
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint64_t layout) {
  return uint64_t((addr >> 4) & 0x3fff) | (uint64_t((lbo >> 4) & 0x3fff) << 16) |
         (uint64_t((sbo >> 4) & 0x3fff) << 32) | (layout << 62);
}
// A 128-byte-swizzled operand: 8-row atoms of 128-byte rows, the 16-byte
// chunks of row r XOR-ed with r % 8, each atom 1024-byte aligned. K-major:
// sbo = bytes between 8-row groups along M/N (lbo unused); MN-major: lbo =
// bytes between 64-element blocks along M/N, sbo = between 8-row groups along K.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return desc(addr, lbo, sbo, 1);
}

// Register and shared-memory operands written before here are visible to the
// wgmmas issued after (every thread of the warpgroup runs it).
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// The wgmmas issued so far as one group.
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Wait for every group: their accumulators may be read and their shared
// memory written again after.
__device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

// S = Q K^T for a warpgroup's 64 rows: d (64 x 64, f32) += A (64 x 16) . B^T
// with B (64 x 16), both K-major by descriptor.
__device__ __forceinline__ void m64n64k16_ss(float (&d)[32], uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, 1, 1, 1, 0, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b)
      : "memory");
}

// d (64 x 64, f32) += A (64 x 16, from registers in the mma.sync A fragment
// layout of each warp's 16 rows) . B (16 x 64 by descriptor: K-major, or with
// kTransB MN-major, B's rows contiguous as V's rows lie in shared memory).
template <int kTransB>
__device__ __forceinline__ void m64n64k16_rs(float (&d)[32], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, 1, 1, 1, %37;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(b), "n"(kTransB)
      : "memory");
}

// The same with B 16 x 128: the GEMMs' tiles (K-major) and O += P V at head_dim 128.
template <int kTransB>
__device__ __forceinline__ void m64n128k16_rs(float (&d)[64], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                              uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, 1, 1, 1, %69;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(b), "n"(kTransB)
      : "memory");
}
#endif

}  // namespace flashdraft::ops::cuda::wgmma
