// Does a Hopper wgmma chain give the same f32 bits as the mma.sync chain of
// gemm_invariant.cuh? If it does, large-M GEMMs may use wgmma without breaking
// batch invariance (a row's bits may not depend on which kernel computed it).
//
// One warpgroup computes a 64 x 128 tile over K = 256 three ways and compares
// the f32 results bit for bit:
//   chain   : mma_block32 per warp (the rule every kernel follows today);
//   wgmma   : wgmma.m64n128k16 with A (x) in registers loaded exactly like the
//             chain's fragments and B (w) in shared memory as core matrices
//             holding the chain's k order;
//   swapped : the chain with the two k-halves of every mma exchanged in A and B
//             alike (same products, another order inside one mma);
//   transposed : w as the A operand and x as B (y^T = w x^T).
// Inputs: plain normals, normals scaled by 2^[-12, 12] and cancelling pairs.
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc bench/wgmma_probe.cu
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "ops/cuda/gemm_invariant.cuh"

using bf16 = __nv_bfloat16;
namespace gemm = flashdraft::ops::cuda::gemm;

constexpr int kM = 64, kN = 128, kK = 256;

// Logical k L (0..15) of the first mma of a 32-k chain block -> the block's k
// (the second mma: + 4). a0/b0 hold logical (2q, 2q+1) = k (8q, 8q+1); a2/b1
// hold logical (2q+8, 2q+9) = k (8q+2, 8q+3).
__host__ __device__ int chain_k(int half, int L) {
  const int q = (L % 8) / 2;
  return 8 * q + (L >= 8 ? 2 : 0) + (L % 2) + 4 * half;
}

__device__ uint64_t desc(const void* smem, int lbo, int sbo) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return uint64_t((a >> 4) & 0x3fff) | (uint64_t((lbo >> 4) & 0x3fff) << 16) | (uint64_t((sbo >> 4) & 0x3fff) << 32);
}

__device__ void wgmma_128(float (&d)[64], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint64_t b) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, 1, 1, 1, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(b));
}

// out[variant][trial][64][128]
__global__ void probe(const bf16* xs, const bf16* ws, float* out, int lbo, int sbo) {
  const int trial = blockIdx.x;
  const bf16* x = xs + size_t(trial) * kM * kK;
  const bf16* w = ws + size_t(trial) * kN * kK;
  float* o = out + size_t(trial) * kM * kN;
  const size_t variant = size_t(gridDim.x) * kM * kN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int r0 = warp * 16 + g;

  // --- chain (and its swapped variant)
  for (int v = 0; v < 2; ++v) {
    for (int j = 0; j < 16; ++j) {
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      for (int b = 0; b < kK / 32; ++b) {
        const uint4 a_lo = *reinterpret_cast<const uint4*>(x + r0 * kK + 32 * b + 8 * q);
        const uint4 a_hi = *reinterpret_cast<const uint4*>(x + (r0 + 8) * kK + 32 * b + 8 * q);
        const uint4 bw = *reinterpret_cast<const uint4*>(w + (8 * j + g) * kK + 32 * b + 8 * q);
        if (v == 0) {
          gemm::mma_block32(acc, a_lo, a_hi, bw);
        } else {
          gemm::mma16816(acc, a_lo.y, a_hi.y, a_lo.x, a_hi.x, bw.y, bw.x);
          gemm::mma16816(acc, a_lo.w, a_hi.w, a_lo.z, a_hi.z, bw.w, bw.z);
        }
      }
      for (int e = 0; e < 4; ++e) {
        const int r = r0 + (e >> 1) * 8, c = 8 * j + 2 * q + (e & 1);
        o[(v == 0 ? 0 : 2) * variant + r * kN + c] = acc[e];
      }
    }
  }

  // --- transposed: A = w (16 w rows), B = x (8 x rows); acc = (w row, x row)
  for (int wt = 0; wt < kN / 16; ++wt) {
    for (int xt = 0; xt < kM / 8; ++xt) {
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      for (int b = 0; b < kK / 32; ++b) {
        const uint4 a_lo = *reinterpret_cast<const uint4*>(w + (16 * wt + g) * kK + 32 * b + 8 * q);
        const uint4 a_hi = *reinterpret_cast<const uint4*>(w + (16 * wt + g + 8) * kK + 32 * b + 8 * q);
        const uint4 bx = *reinterpret_cast<const uint4*>(x + (8 * xt + g) * kK + 32 * b + 8 * q);
        gemm::mma_block32(acc, a_lo, a_hi, bx);
      }
      if (warp == 0)
        for (int e = 0; e < 4; ++e) {
          const int n = 16 * wt + g + (e >> 1) * 8, m = 8 * xt + 2 * q + (e & 1);
          o[3 * variant + m * kN + n] = acc[e];
        }
    }
  }

  // --- wgmma: B for every (block, half) as core matrices [ng 16][c 2][8 rows][8 k]
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sb = reinterpret_cast<bf16*>(smem);
  constexpr int kStep = 16 * 2 * 64;  // elements per k16 step
  for (int i = tid; i < (kK / 16) * kStep; i += blockDim.x) {
    const int s = i / kStep, rest = i % kStep;
    const int ng = rest / 128, c = (rest / 64) % 2, r = (rest / 8) % 8, jj = rest % 8;
    const int b = s / 2, half = s % 2;
    sb[i] = w[(8 * ng + r) * kK + 32 * b + chain_k(half, 8 * c + jj)];
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  float d[64];
  for (int i = 0; i < 64; ++i) d[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  for (int b = 0; b < kK / 32; ++b) {
    const uint4 a_lo = *reinterpret_cast<const uint4*>(x + r0 * kK + 32 * b + 8 * q);
    const uint4 a_hi = *reinterpret_cast<const uint4*>(x + (r0 + 8) * kK + 32 * b + 8 * q);
    wgmma_128(d, a_lo.x, a_hi.x, a_lo.y, a_hi.y, desc(sb + (2 * b) * kStep, lbo, sbo));
    wgmma_128(d, a_lo.z, a_hi.z, a_lo.w, a_hi.w, desc(sb + (2 * b + 1) * kStep, lbo, sbo));
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int j = 0; j < 16; ++j)
    for (int e = 0; e < 4; ++e) {
      const int r = r0 + (e >> 1) * 8, c = 8 * j + 2 * q + (e & 1);
      o[1 * variant + r * kN + c] = d[4 * j + e];
    }
}

int main() {
  const int trials = 48;  // 16 of each input kind
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  std::uniform_int_distribution<int> ex(-12, 12);
  std::vector<bf16> x(size_t(trials) * kM * kK), w(size_t(trials) * kN * kK);
  auto make = [&](std::vector<bf16>& v, int trial, size_t n) {
    const int kind = trial % 3;
    for (size_t i = 0; i < n; ++i) {
      float f = nd(rng);
      if (kind == 1) f = std::ldexp(f, ex(rng));
      if (kind == 2 && (i % 2) == 1) f = -__bfloat162float(v[trial * n + i - 1]) * (1.f + 0.01f * nd(rng));
      v[trial * n + i] = __float2bfloat16(f);
    }
  };
  for (int t = 0; t < trials; ++t) {
    make(x, t, size_t(kM) * kK);
    make(w, t, size_t(kN) * kK);
  }
  bf16 *dx, *dw;
  float* dout;
  const size_t per = size_t(trials) * kM * kN;
  cudaMalloc(&dx, x.size() * 2);
  cudaMalloc(&dw, w.size() * 2);
  cudaMalloc(&dout, 4 * per * 4);
  cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, w.data(), w.size() * 2, cudaMemcpyHostToDevice);
  const int smem = (kK / 16) * 16 * 2 * 64 * 2;
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  // The descriptor's two offsets for core matrices adjacent in K (128 B) and in N (256 B), both ways round.
  const int pairs[2][2] = {{128, 256}, {256, 128}};
  for (auto& p : pairs) {
    cudaMemset(dout, 0xff, 4 * per * 4);
    probe<<<trials, 128, smem>>>(dx, dw, dout, p[0], p[1]);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::printf("launch failed: %s\n", cudaGetErrorString(e));
      return 1;
    }
    std::vector<float> out(4 * per);
    cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost);
    // Sanity against a double reference (the layout is right), then bits against the chain.
    double worst = 0;
    for (int t = 0; t < trials; t += 3)
      for (int m = 0; m < kM; ++m)
        for (int n = 0; n < kN; ++n) {
          double s = 0, mag = 0;
          for (int k = 0; k < kK; ++k) {
            const double p2 = double(__bfloat162float(x[(size_t(t) * kM + m) * kK + k])) *
                              __bfloat162float(w[(size_t(t) * kN + n) * kK + k]);
            s += p2;
            mag += std::fabs(p2);
          }
          worst = std::max(worst, std::fabs(out[per + (size_t(t) * kM + m) * kN + n] - s) / (mag + 1e-30));
        }
    std::printf("lbo %d sbo %d: wgmma vs double, worst |err| / sum|products| = %.3g\n", p[0], p[1], worst);
    const char* names[4] = {"chain", "wgmma", "swapped", "transposed"};
    for (int v = 1; v < 4; ++v) {
      size_t differ[3] = {0, 0, 0};
      for (size_t i = 0; i < per; ++i) {
        uint32_t a, b;
        std::memcpy(&a, &out[i], 4);
        std::memcpy(&b, &out[v * per + i], 4);
        if (a != b) ++differ[(i / (size_t(kM) * kN)) % 3];
      }
      std::printf("  %-10s vs chain: differing elements normal %zu, wide %zu, cancelling %zu (of %zu each)\n", names[v],
                  differ[0], differ[1], differ[2], per / 3);
    }
  }
  return 0;
}
