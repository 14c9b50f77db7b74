// The split reduce (paged_attention_reduce.h).
#include "ops/cuda/paged_attention_reduce.h"

#include <string>

#include "core/error.h"
#include "ops/cuda/attention_fold.cuh"
#include "ops/cuda/kernel_launch.h"

namespace flashdraft::ops::cuda {
namespace {

// The reduce after a key range cut into several CTA groups: one CTA of HD
// threads per (row, head), thread e owning output element e; the partial
// sums of up to kReduceBatch splits are loaded at once (see the kernel).
constexpr int kReduceBatch = 32;

// Slots past this many (counted as the attention kernel counts them, from
// the split holding its CTA's first key) are empty for a row at `pos`: its
// last visible key is at most `pos` (causal) or within the sequence, whose
// rows are at most max_rows; its CTA's first key is at least the window's
// start for the sequence's first row. Bounds only: skipping slots that are
// empty anyway changes no bits.
__device__ __forceinline__ int row_slots(const SplitReduceParams& r, int pos) {
  int last = r.causal ? pos : pos + r.max_rows - 1;
  if (r.window > 0 && !r.causal) last = min(last, pos + r.window - 1);
  const int first = r.window > 0 ? max(0, pos - (r.max_rows - 1) - r.window + 1) : 0;
  const SplitTiers splits = r.splits;  // a copy in registers (the parameter's would go through the stack)
  return min(r.slots, max(0, splits.of(last) - splits.of(first) + 1));
}

// Rows of up to kReduceBatch slots take the split weights from one thread,
// in sequence, as the kernel's fold does. Rows of more (key ranges past ~10k
// keys) take them from every thread at once (kScan) and load all their
// partials (up to 2 kReduceBatch) together; one thread's chain and two
// rounds of loads had a 60-slot row's reduce end 7.5 us after the attention
// grid (H200, decode at batch 1 and 32k). A split's weights need only the
// row's running max before it and with it, and max is exact in any order,
// so a scan over the slots gives fold_weights' own values; only the row sum
// stays a chain, folded beside the output in slot order. Two kernels, not a
// branch: with both paths in one kernel the short rows lost 0.4 us
// (bench_attention_notes.md).
template <int HD, bool kScan>
__global__ void __launch_bounds__(HD) paged_attention_reduce_kernel(const SplitReduceParams r) {
  constexpr int kBatch = kScan ? 2 * kReduceBatch : kReduceBatch;
  const int w = blockIdx.x;  // row * n_heads + head
  // The row's position is a step input, ready before the attention grid ends.
  const int slots = r.positions ? row_slots(r, __ldg(r.positions + w / r.n_heads)) : r.slots;
  const float* __restrict__ part_o = r.part_o;
  const float2* __restrict__ part_ml = r.part_ml;
  const int n_rows = r.n_rows, n_heads = r.n_heads;
  // Launched as a programmatic dependent: it may start while the attention grid drains.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  // And lets the output projection (a GEMM) be scheduled while this runs.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  // Per slot: one thread's (m, l), then the weights (a, b); with kScan the
  // weights and the split's row sum (a, b, l). b < 0: an empty split.
  extern __shared__ __align__(16) unsigned char s_slots[];
  __shared__ float s_l;
  const int e = threadIdx.x;
  const int64_t stride = static_cast<int64_t>(n_rows) * n_heads;
  const float* src = part_o + static_cast<int64_t>(w) * HD + e;
  float v[kBatch];
#pragma unroll
  for (int j = 0; j < kBatch; ++j) v[j] = j < slots ? __ldcg(src + j * stride * HD) : 0.f;
  if constexpr (kScan) {
    float4* s_abl = reinterpret_cast<float4*>(s_slots);
    constexpr int kWarps = HD / 32;
    __shared__ float s_warp_max[kWarps];
    const int lane = e % 32, warp = e / 32;
    // HD slots at a time, thread e taking slot c0 + e; `carry` is the max of the slots before c0.
    float carry = kNegInf;
    for (int c0 = 0; c0 < slots; c0 += HD) {
      const int i = c0 + e;
      const float2 ml = i < slots ? __ldcg(part_ml + i * stride + w) : make_float2(kNegInf, 0.f);
      float incl = ml.x;  // max over this warp's slots up to i
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const float o = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl = fmaxf(incl, o);
      }
      const float excl_warp = __shfl_up_sync(0xffffffffu, incl, 1);
      if (lane == 31) s_warp_max[warp] = incl;
      __syncthreads();
      float before = carry;  // the max of every slot before this warp's first
      for (int k = 0; k < warp; ++k) before = fmaxf(before, s_warp_max[k]);
      // The left fold's running max before slot i (split_weights takes the max with it).
      const float m_acc = lane == 0 ? before : fmaxf(before, excl_warp);
      if (i < slots) {
        float a = 0.f, b = -1.f;
        if (ml.x != kNegInf) split_weights(m_acc, ml.x, a, b);
        s_abl[i] = make_float4(a, b, ml.y, 0.f);
      }
      for (int k = 0; k < kWarps; ++k) carry = fmaxf(carry, s_warp_max[k]);
      __syncthreads();  // s_warp_max is rewritten by the next round; s_abl is read below
    }
  } else {
    float2* s_w = reinterpret_cast<float2*>(s_slots);
    for (int i = e; i < slots; i += HD) s_w[i] = __ldcg(part_ml + i * stride + w);
    __syncthreads();
    if (e == 0) {
      float m_acc = kNegInf, l_acc = 0.f;
      for (int i = 0; i < slots; ++i) {
        const float2 ml = s_w[i];
        float a, b;
        s_w[i] = fold_weights(m_acc, l_acc, ml.x, ml.y, a, b) ? make_float2(a, b) : make_float2(0.f, -1.f);
      }
      s_l = l_acc;
    }
    __syncthreads();
  }
  float acc = 0.f, l_acc = 0.f;
  for (int i0 = 0; i0 < slots; i0 += kBatch) {
    if (i0 > 0) {
#pragma unroll
      for (int j = 0; j < kBatch; ++j) v[j] = i0 + j < slots ? __ldcg(src + (i0 + j) * stride * HD) : 0.f;
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (i0 + j < slots) {
        if constexpr (kScan) {
          const float4 abl = reinterpret_cast<const float4*>(s_slots)[i0 + j];
          if (abl.y >= 0.f) {
            acc = fold_acc(acc, abl.x, v[j], abl.y);
            l_acc = fold_acc(l_acc, abl.x, abl.z, abl.y);
          }
        } else {
          const float2 ab = reinterpret_cast<const float2*>(s_slots)[i0 + j];
          if (ab.y >= 0.f) acc = fold_acc(acc, ab.x, v[j], ab.y);
        }
      }
    }
  }
  if constexpr (!kScan) l_acc = s_l;
  const int row = w / n_heads, h = w % n_heads;
  r.out[static_cast<int64_t>(row) * r.out_ld + h * HD + e] =
      __float2bfloat16_rn(fold_result(acc, l_acc, __frcp_rn(l_acc)));
}

}  // namespace

void launch_split_reduce(const SplitReduceParams& r, int head_dim, cudaStream_t stream) {
  const bool many = r.slots > kReduceBatch;
  const KernelLaunch launch(dim3(static_cast<unsigned>(static_cast<int64_t>(r.n_rows) * r.n_heads)),
                            dim3(static_cast<unsigned>(head_dim)),
                            static_cast<size_t>(r.slots) * (many ? sizeof(float4) : sizeof(float2)), stream, true);
  cudaError_t e = cudaErrorInvalidValue;
  if (head_dim == 64)
    e = cudaLaunchKernelEx(&launch.config,
                           many ? paged_attention_reduce_kernel<64, true> : paged_attention_reduce_kernel<64, false>, r);
  else if (head_dim == 128)
    e = cudaLaunchKernelEx(&launch.config,
                           many ? paged_attention_reduce_kernel<128, true> : paged_attention_reduce_kernel<128, false>, r);
  if (e != cudaSuccess) throw Error(std::string("paged_attention: reduce launch: ") + cudaGetErrorString(e));
}

}  // namespace flashdraft::ops::cuda
