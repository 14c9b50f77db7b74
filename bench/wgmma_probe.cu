// Does a Hopper wgmma chain give the same f32 bits as the mma.sync chain of
// gemm_invariant.cuh? If it does, large-M GEMMs may use wgmma without breaking
// batch invariance (a row's bits may not depend on which kernel computed it).
//
// One warpgroup computes a 64 x 128 tile over K = 256 three ways and compares
// the f32 results bit for bit:
//   chain   : mma_block32 per warp (the rule every kernel follows today);
//   wgmma   : gemm::wgmma_n128 with A (x) in registers loaded exactly like the
//             chain's fragments and B (w) in shared memory as core matrices
//             holding the chain's k order (gemm::chain_k, gemm::wgmma_desc);
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

#include "ops/cuda/common.cuh"
#include "ops/cuda/gemm_invariant.cuh"

using bf16 = __nv_bfloat16;
using flashdraft::ops::cuda::smem_u32;
namespace gemm = flashdraft::ops::cuda::gemm;

constexpr int kM = 64, kN = 128, kK = 256;

// out[variant][trial][64][128]
__global__ void probe(const bf16* xs, const bf16* ws, float* out) {
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
    sb[i] = w[(8 * ng + r) * kK + 32 * b + gemm::chain_k(half, 8 * c + jj)];
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  float d[64];
  for (int i = 0; i < 64; ++i) d[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  for (int b = 0; b < kK / 32; ++b) {
    const uint4 a_lo = *reinterpret_cast<const uint4*>(x + r0 * kK + 32 * b + 8 * q);
    const uint4 a_hi = *reinterpret_cast<const uint4*>(x + (r0 + 8) * kK + 32 * b + 8 * q);
    gemm::wgmma_n128(d, a_lo.x, a_hi.x, a_lo.y, a_hi.y, gemm::wgmma_desc(smem_u32(sb + (2 * b) * kStep)));
    gemm::wgmma_n128(d, a_lo.z, a_hi.z, a_lo.w, a_hi.w, gemm::wgmma_desc(smem_u32(sb + (2 * b + 1) * kStep)));
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
  cudaMemset(dout, 0xff, 4 * per * 4);
  probe<<<trials, 128, smem>>>(dx, dw, dout);
  const cudaError_t e = cudaDeviceSynchronize();
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
  std::printf("wgmma vs double, worst |err| / sum|products| = %.3g\n", worst);
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
  return 0;
}
