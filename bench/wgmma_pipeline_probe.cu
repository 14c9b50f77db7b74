// How fast could the large-M wgmma GEMM (src/ops/cuda/gemm_tiles.cu's
// Rows128: 360-460 TFLOP/s at M = 2048, cuBLAS ~750) run, and what costs it
// the difference? Standalone kernels of the same structure (a producer
// warpgroup filling stages on mbarriers, two consumer warpgroups of 64 rows,
// wgmma m64n128k16, one CTA a multiprocessor), each variant changing one
// thing: x and w both by descriptor (SS) or x as register fragments in the
// chain's order (RS, the engine's form); x pre-tiled (one bulk copy a
// stage), by cp.async from row-major, or by a 2-D tensor copy (TMA); one
// group in flight or none; 128- or 256-column tiles; the engine's slices
// (gemm_invariant.cuh rule 2: each slice's partial from +0, folded into a
// running total in shared memory or registers); f32 or bf16 y. Every variant
// is checked against a host reference on 256 sampled elements.
// Results and what they mean: bench/gemm_notes.md, "Prefill GEMMs: a
// pipeline probe" (2026-12-04, H200).
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc -o /tmp/wpp bench/wgmma_pipeline_probe.cu
// Run:   /tmp/wpp [reps]   (Qwen3-8B's qkv, o, gate_up, down at M = 2048)
#include <cuda.h>
#include <cuda_bf16.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda_check.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/gemm_invariant.cuh"
#include "ops/cuda/mbarrier.cuh"

using bf16 = __nv_bfloat16;
using namespace flashdraft::ops::cuda;
namespace gemm = flashdraft::ops::cuda::gemm;


constexpr int BM = 128, BK = 64, kSlabs = BK / 16;

#define R8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, 1, 1, 1, 0, 0;\n"
      : R8(0), R8(8), R8(16), R8(24), R8(32), R8(40), R8(48), R8(56)
      : "l"(a), "l"(b)
      : "memory");
}

__device__ __forceinline__ void tma_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(map), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}

// Position p (0..63: wgmma slab p / 16, its core matrix (p % 16) / 8, element
// p % 8) of row r in a [rows x 64] stage: the element's offset.
__host__ __device__ constexpr int stage_off(int rows, int r, int p) {
  return (p / 16) * rows * 16 + (r / 8) * 128 + ((p % 16) / 8) * 64 + (r % 8) * 8 + p % 8;  // elements
}
// The k (within the stage) at position p: natural (the slab's 16 k's in
// order) or the engine's chain (slab 2 b + h is the h-th mma of block b,
// its core matrices logical positions 0-7 and 8-15: gemm::chain_k).
__host__ __device__ constexpr int src_k(int p, bool chain) {
  return chain ? 32 * (p / 32) + gemm::chain_k((p / 16) % 2, p % 16) : p;
}

// X_MODE 0: x pre-tiled, one bulk copy a stage; 1: 16-byte cp.async from
// row-major, natural order; 2: 4-byte cp.async from row-major into the chain's order;
// 3: two 2-D tensor copies (TMA) from row-major, a 32-k block each ([block][row][64 B]).
// RS: x as register fragments in the chain's order (the engine's kernel: x
// per 32-k block [row][64 B], w in chain order), else both by descriptor.
// FOLD > 0: the engine's slices (gemm_invariant.cuh rule 2), FOLD k tiles
// each, every slice's partial folded into a running total at its end: in
// shared memory (TOTAL_SMEM, Mode::Folded's way) or in registers. BF16: y
// rounded to bf16 as the engine stores it.
template <int BN, int STAGES, int X_MODE, int INFLIGHT, bool RS = false, int FOLD = 0, bool TOTAL_SMEM = true,
          bool BF16 = false, int SBK = BK>
__global__ void __launch_bounds__(384, 1)
    gemm_probe(const bf16* xt, const bf16* x, const bf16* wt, float* y, int M, int N, int K,
               const __grid_constant__ CUtensorMap xmap) {
  static_assert(SBK == BK || (SBK == 32 && RS && X_MODE == 3), "32-k stages: RS, TMA x");
  constexpr int kXBytes = BM * SBK * 2, kWBytes = BN * SBK * 2, kStage = kXBytes + kWBytes;
  extern __shared__ __align__(1024) unsigned char smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * kStage);
  uint64_t* empty = full + STAGES;
  const int tid = threadIdx.x, wg = tid / 128;
  const int mt = blockIdx.x, nt = blockIdx.y;
  const int kt_n = K / SBK;
  const uint32_t base = smem_u32(smem);
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], (X_MODE == 1 || X_MODE == 2) ? 129 : 1);
      mbar_init(&empty[s], 2);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (wg == 2) {  // producer warpgroup
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    const int pt = tid - 256;
    for (int i = 0; i < kt_n; ++i) {
      const int s = i % STAGES;
      if (i >= STAGES) mbar_wait(&empty[s], ((i / STAGES) - 1) & 1);
      const uint32_t sx = base + s * kStage, sw = sx + kXBytes;
      if (pt == 0) {
        mbar_expect_tx(&full[s], (X_MODE == 1 || X_MODE == 2) ? kWBytes : kStage);
        if (X_MODE == 0) bulk_copy(sx, xt + (size_t(mt) * kt_n + i) * BM * BK, kXBytes, &full[s]);
        if (X_MODE == 3) {
          tma_2d(sx, &xmap, i * SBK, mt * BM, &full[s]);
          if (SBK == 64) tma_2d(sx + BM * 64, &xmap, i * SBK + 32, mt * BM, &full[s]);
        }
        const int k64 = (i * SBK) / 64, half = (i * SBK) % 64 / 32;
        bulk_copy(sw, wt + (size_t(nt) * (K / 64) + k64) * BN * 64 + half * BN * 32, kWBytes, &full[s]);
      }
      if (X_MODE == 1) {
        // 128 rows x 8 pieces of 16 bytes; a thread takes one piece of 8 rows.
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int idx = pt + 128 * j, r = idx / 8, p = idx % 8;
          const bf16* src = x + size_t(mt * BM + r) * K + i * BK + p * 8;
          const uint32_t dst = RS ? sx + (((p >> 2) * BM + r) * 4 + (p & 3)) * 16 : sx + stage_off(BM, r, p * 8) * 2;
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
        }
        cp_async_mbar_arrive(&full[s]);
      } else if (X_MODE == 2) {
        // A warp takes 8 rows at a time, lane (row l % 8, pair u = l / 8), and
        // for each (block b, half h, core kc) copies the 4 bytes of k's
        // 32 b + 8 u + 4 h + 2 kc: 32 lanes, 32 banks.
        const int w = pt / 32, l = pt % 32, u = l / 8;
#pragma unroll 2
        for (int rg = w; rg < BM / 8; rg += 4) {
          const int r = rg * 8 + l % 8;
          const bf16* row = x + size_t(mt * BM + r) * K + i * BK;
#pragma unroll
          for (int c = 0; c < 8; ++c) {
            const int b = c / 4, h = (c / 2) % 2, kc = c % 2;
            const bf16* src = row + 32 * b + 8 * u + 4 * h + 2 * kc;
            const uint32_t dst = sx + stage_off(BM, r, (2 * b + h) * 16 + kc * 8 + 2 * u) * 2;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
          }
        }
        cp_async_mbar_arrive(&full[s]);
      }
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  constexpr int NB = BN / 128;
  float acc[NB][64];
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int e = 0; e < 64; ++e) acc[b][e] = 0.f;
  float* total_smem = reinterpret_cast<float*>(smem + STAGES * kStage + 2 * STAGES * 8) + (tid % 256);
  float total_reg[(FOLD > 0 && !TOTAL_SMEM) ? 64 : 1];
  static_assert(!(FOLD > 0 && !TOTAL_SMEM && NB > 1), "register totals: n128 only");
  bool first_slice = true;
  for (int i = 0; i < kt_n; ++i) {
    const int s = i % STAGES;
    mbar_wait(&full[s], (i / STAGES) & 1);
    const uint32_t sx = base + s * kStage, sw = sx + kXBytes;
    if constexpr (RS) {
      const int t = tid % 128, r = wg * 64 + (t / 32) * 16 + (t % 32) / 4, q = t % 4;
      const unsigned char* px = smem + s * kStage;
      constexpr int kBlk = SBK / 32;
      uint4 lo[kBlk], hi[kBlk];
#pragma unroll
      for (int blk = 0; blk < kBlk; ++blk) {
        lo[blk] = *reinterpret_cast<const uint4*>(px + ((blk * BM + r) * 4 + q) * 16);
        hi[blk] = *reinterpret_cast<const uint4*>(px + ((blk * BM + r + 8) * 4 + q) * 16);
      }
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int blk = 0; blk < kBlk; ++blk)
#pragma unroll
        for (int b = 0; b < NB; ++b) {
          gemm::wgmma_n128(acc[b], lo[blk].x, hi[blk].x, lo[blk].y, hi[blk].y, gemm::wgmma_desc(sw + ((2 * blk) * BN * 16 + b * 128 * 16) * 2));
          gemm::wgmma_n128(acc[b], lo[blk].z, hi[blk].z, lo[blk].w, hi[blk].w,
                        gemm::wgmma_desc(sw + ((2 * blk + 1) * BN * 16 + b * 128 * 16) * 2));
        }
    } else {
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int k = 0; k < kSlabs; ++k) {
        const uint64_t da = gemm::wgmma_desc(sx + (k * BM * 16 + wg * 64 * 16) * 2);
#pragma unroll
        for (int b = 0; b < NB; ++b) wgmma_ss_n128(acc[b], da, gemm::wgmma_desc(sw + (k * BN * 16 + b * 128 * 16) * 2));
      }
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    if constexpr (INFLIGHT == 1) {
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (i > 0 && (tid % 128) == 0) mbar_arrive(&empty[(i - 1) % STAGES]);
    } else {
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      if ((tid % 128) == 0) mbar_arrive(&empty[s]);
    }
    if constexpr (FOLD > 0) {
      if ((i + 1) % FOLD == 0 || i + 1 == kt_n) {
#pragma unroll
        for (int b = 0; b < NB; ++b)
#pragma unroll
        for (int e = 0; e < 64; ++e) {
          if constexpr (TOTAL_SMEM) {
            float& t = total_smem[(b * 64 + e) * 256];
            t = first_slice ? acc[b][e] : __fadd_rn(t, acc[b][e]);
          } else {
            total_reg[e] = first_slice ? acc[0][e] : __fadd_rn(total_reg[e], acc[0][e]);
          }
          acc[b][e] = 0.f;
        }
        first_slice = false;
      }
    }
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  // Accumulator (m64nNk16 f32): thread t of the warpgroup, register e of n-block j:
  // row 16 (t / 32) + (t % 32) / 4 + 8 ((e / 2) % 2), column 8 (e / 4) + 2 (t % 4) + e % 2.
  const int t = tid % 128;
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int e = 0; e < 64; ++e) {
      const int r = mt * BM + wg * 64 + 16 * (t / 32) + (t % 32) / 4 + 8 * ((e / 2) % 2);
      const int c = nt * BN + b * 128 + 8 * (e / 4) + 2 * (t % 4) + e % 2;
      float v = acc[b][e];
      if constexpr (FOLD > 0) v = TOTAL_SMEM ? total_smem[(b * 64 + e) * 256] : total_reg[(FOLD > 0 && !TOTAL_SMEM) ? e : 0];
      if constexpr (BF16)
        reinterpret_cast<bf16*>(y)[size_t(r) * N + c] = __float2bfloat16_rn(v);
      else
        y[size_t(r) * N + c] = v;
    }
}

struct Shape {
  const char* name;
  int N, K, slice_tiles;  // the engine's slice on a 132-multiprocessor H200, in 64-k tiles
};

CUtensorMap g_xmap;

template <int BN, int STAGES, int X_MODE, int INFLIGHT, bool RS = false, int FOLD = 0, bool TOTAL_SMEM = true,
          bool BF16 = false, int SBK = BK>
double run(const char* label, const bf16* dxt, const bf16* dx, const bf16* dwt, float* dy, int M, int N, int K,
           int reps, const std::vector<float>& xh, const std::vector<float>& wh) {
  auto kern = gemm_probe<BN, STAGES, X_MODE, INFLIGHT, RS, FOLD, TOTAL_SMEM, BF16, SBK>;
  const int smem = STAGES * (BM * SBK * 2 + BN * SBK * 2) + 2 * STAGES * 8 +
                   (FOLD > 0 && TOTAL_SMEM ? (BN / 128) * 64 * 256 * 4 : 0);
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  dim3 grid(M / BM, N / BN);
  CK(cudaMemset(dy, 0, size_t(M) * N * 4));
  kern<<<grid, 384, smem>>>(dxt, dx, dwt, dy, M, N, K, g_xmap);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  // Check sampled elements against the host.
  std::vector<float> yh(size_t(M) * N);
  if (BF16) {
    std::vector<bf16> yb(yh.size());
    CK(cudaMemcpy(yb.data(), dy, yb.size() * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < yh.size(); ++i) yh[i] = __bfloat162float(yb[i]);
  } else {
    CK(cudaMemcpy(yh.data(), dy, yh.size() * 4, cudaMemcpyDeviceToHost));
  }
  std::mt19937 rng(7);
  double worst = 0;
  for (int s = 0; s < 256; ++s) {
    const int r = rng() % M, c = rng() % N;
    double ref = 0;
    for (int k = 0; k < K; ++k) ref += double(xh[size_t(r) * K + k]) * wh[size_t(c) * K + k];
    worst = std::max(worst, std::fabs(ref - yh[size_t(r) * N + c]) / (1e-3 + std::fabs(ref)));
  }
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ts;
  for (int rr = 0; rr < reps; ++rr) {
    CK(cudaEventRecord(a));
    kern<<<grid, 384, smem>>>(dxt, dx, dwt, dy, M, N, K, g_xmap);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  const double us = ts[ts.size() / 2] * 1e3;
  const double tflops = 2.0 * M * N * K / (us * 1e-6) / 1e12;
  // gemm_proto's way: 5 calls back to back, median of 9 such runs (the GPU kept busy).
  std::vector<float> tb;
  for (int rr = 0; rr < 9; ++rr) {
    CK(cudaEventRecord(a));
    for (int j = 0; j < 5; ++j) kern<<<grid, 384, smem>>>(dxt, dx, dwt, dy, M, N, K, g_xmap);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    tb.push_back(ms / 5);
  }
  std::sort(tb.begin(), tb.end());
  const double tflops_b2b = 2.0 * M * N * K / (tb[4] * 1e-3) / 1e12;
  std::printf("| %s | %d | %d | %.1f | %.0f | %.0f | %.1e |\n", label, N, K, us, tflops, tflops_b2b, worst);
  return us;
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int M = 2048;
  const Shape shapes[] = {{"qkv", 6144, 4096, 16}, {"o", 4096, 4096, 8}, {"gate_up", 24576, 4096, 32}, {"down", 4096, 12288, 24}};
  std::printf("| variant | N | K | us | TFLOP/s | TFLOP/s, 5 calls back to back | worst rel err (256 samples) |\n|---|---|---|---|---|---|---|\n");
  for (const Shape& sh : shapes) {
    const int N = sh.N, K = sh.K;
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    std::vector<float> xh(size_t(M) * K), wh(size_t(N) * K);
    std::vector<bf16> xb(xh.size()), wb(wh.size());
    for (size_t i = 0; i < xh.size(); ++i) xb[i] = __float2bfloat16(nd(rng)), xh[i] = __bfloat162float(xb[i]);
    for (size_t i = 0; i < wh.size(); ++i) wb[i] = __float2bfloat16(nd(rng) * 0.02f), wh[i] = __bfloat162float(wb[i]);
    // Pre-tiled copies: stage (tile, kt) contiguous, laid out by stage_off.
    auto tile = [&](const std::vector<bf16>& src, int rows_total, int rows, bool chain) {
      std::vector<bf16> t(src.size());
      const int kt_n = K / BK;
      for (int rt = 0; rt < rows_total / rows; ++rt)
        for (int kt = 0; kt < kt_n; ++kt)
          for (int r = 0; r < rows; ++r)
            for (int k = 0; k < BK; ++k)
              t[(size_t(rt) * kt_n + kt) * rows * BK + stage_off(rows, r, k)] =
                  src[size_t(rt * rows + r) * K + kt * BK + src_k(k, chain)];
      return t;
    };
    // x per 32-k block, [block][row][32 k] a stage: what the RS consumer reads.
    std::vector<bf16> xr(xb.size());
    for (int rt = 0; rt < M / BM; ++rt)
      for (int kt = 0; kt < K / BK; ++kt)
        for (int r = 0; r < BM; ++r)
          for (int k = 0; k < BK; ++k)
            xr[(size_t(rt) * (K / BK) + kt) * BM * BK + (k / 32) * BM * 32 + r * 32 + k % 32] =
                xb[size_t(rt * BM + r) * K + kt * BK + k];
    const std::vector<bf16> xt = tile(xb, M, BM, false), wt128 = tile(wb, N, 128, false),
                            wt256 = tile(wb, N, 256, false), wc128 = tile(wb, N, 128, true),
                            wc256 = tile(wb, N, 256, true);
    bf16 *dx, *dxt, *dxr, *dw128, *dw256, *dc128, *dc256;
    CK(cudaMalloc(&dxr, xb.size() * 2));
    CK(cudaMemcpy(dxr, xr.data(), xr.size() * 2, cudaMemcpyHostToDevice));
    float* dy;
    CK(cudaMalloc(&dx, xb.size() * 2));
    CK(cudaMalloc(&dxt, xb.size() * 2));
    CK(cudaMalloc(&dw128, wb.size() * 2));
    CK(cudaMalloc(&dw256, wb.size() * 2));
    CK(cudaMalloc(&dc128, wb.size() * 2));
    CK(cudaMalloc(&dc256, wb.size() * 2));
    CK(cudaMalloc(&dy, size_t(M) * N * 4));
    CK(cudaMemcpy(dx, xb.data(), xb.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dxt, xt.data(), xt.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw128, wt128.data(), wt128.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw256, wt256.data(), wt256.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc128, wc128.data(), wc128.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc256, wc256.data(), wc256.size() * 2, cudaMemcpyHostToDevice));
    {
      PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
      cudaDriverEntryPointQueryResult q;
      CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                            cudaEnableDefault, &q));
      const cuuint64_t dims[2] = {cuuint64_t(K), cuuint64_t(M)};
      const cuuint64_t strides[1] = {cuuint64_t(K) * 2};
      const cuuint32_t box[2] = {32, BM}, estr[2] = {1, 1};
      const CUresult rc = encode(&g_xmap, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, dx, dims, strides, box, estr,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (rc != CUDA_SUCCESS) std::printf("tensor map: error %d\n", int(rc));
    }
    std::printf("| **%s** | | | | | | |\n", sh.name);
    const int F = sh.slice_tiles;
#define FD_PROBE_RUNS(FT)                                                                                         \
  run<128, 4, 1, 0, true, FT, true, true>("RS n128, cp.async x, slices, smem totals, bf16 y (engine-like)", dxr, dx, \
                                          dc128, dy, M, N, K, reps, xh, wh);                                          \
  run<128, 4, 3, 0, true, FT, true, true>("RS n128, TMA x, slices, smem totals, bf16 y", dxr, dx, dc128, dy, M, N, K,  \
                                          reps, xh, wh);                                                              \
  run<256, 2, 3, 0, true, FT, true, true>("RS n256, TMA x, slices, smem totals, bf16 y, 2 stages", dxr, dx, dc256, dy, \
                                          M, N, K, reps, xh, wh);                                                     \
  run<256, 4, 3, 0, true, 2 * FT, true, true, 32>("RS n256, TMA x, slices, smem totals, bf16 y, 4 stages of 32 k",    \
                                                  dxr, dx, dc256, dy, M, N, K, reps, xh, wh);                         \
  run<256, 3, 3, 0, true, 2 * FT, true, true, 32>("RS n256, TMA x, slices, smem totals, bf16 y, 3 stages of 32 k",    \
                                                  dxr, dx, dc256, dy, M, N, K, reps, xh, wh);
    if (F == 8) {
      FD_PROBE_RUNS(8)
    } else if (F == 16) {
      FD_PROBE_RUNS(16)
    } else if (F == 24) {
      FD_PROBE_RUNS(24)
    } else {
      FD_PROBE_RUNS(32)
    }
    run<256, 4, 3, 0, true>("RS n256, TMA x, whole K (no slices, f32 y)", dxr, dx, dc256, dy, M, N, K, reps, xh, wh);
    CK(cudaFree(dx));
    CK(cudaFree(dxt));
    CK(cudaFree(dxr));
    CK(cudaFree(dw128));
    CK(cudaFree(dw256));
    CK(cudaFree(dc128));
    CK(cudaFree(dc256));
    CK(cudaFree(dy));
  }
  return 0;
}
