// How close to the memory floor can a batch-1 decode step of Qwen3-8B's
// shapes get when its kernel boundaries stop costing DRAM time? Issue 7's
// 0.90 of the floor is missed by the engine's step (0.79 replayed on an
// H200): its GEMMs add 0.91 of their floor, and the short kernels between
// them (norms, attention, the split reduce) cost dependency latency that
// programmatic dependent launch only partly hides (bench/gemm_notes.md).
// This probe measures the alternative design, one persistent kernel for the
// whole step, against the same work as one kernel per phase, with the same
// matrix-vector routines in both so that only the boundaries differ.
//
// Not the engine's arithmetic: f32 FMAs over bf16 weights (not the
// batch-invariant tensor-core chain of gemm_invariant.cuh), and the
// attention stands in as a read of the layer's K/V (1k keys, 4 MB) with no
// softmax. So it bounds what a persistent step could gain; it does not show
// that the engine's kernels would reach it. The warp-a-row modes compute the
// same logits bit for bit (printed: a check that the barriers order the
// phases); the streaming ones add a row's 4096-weight pieces in shared memory
// by atomics, in no fixed order, so theirs may differ in the last bits.
//
// A step: per layer, 5 phases (qkv over rmsnorm(residual); the K/V read; o;
// gate_up over rmsnorm(residual + o); down over silu(gate) * up), then the
// lm head. Modes:
//   kernels            one launch a phase, a warp a weight row, plain
//                      stream order (a replayed graph)
//   kernels_pdl        the same, each a programmatic dependent: each warp
//                      loads its first weight chunk, then griddepcontrol.wait
//   persistent         one cooperative launch, a grid barrier between phases
//   persistent_pre     the same, each warp loading its first weight chunk of
//                      the next matrix before the barrier
//   persistent_stream  one cooperative launch; a producer warp a block copies
//                      the block's weight items of every phase in order into
//                      a 128 KB ring (cp.async.bulk), so the next phase's
//                      weights stream in while the consumers are at a barrier
//   kernels_stream_pdl the streaming kernel, one launch a phase, each a
//                      programmatic dependent whose producer starts at once
// Floor: the step's weight and K/V bytes over a 1 GiB device-to-device copy
// (read + write counted), as bench/step_floor.h measures it. Then one grid
// barrier alone, and each matrix alone in one launch of either routine.
//
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc bench/persistent_step_probe.cu -o persistent_step_probe
// Run:   ./persistent_step_probe [reps, default 20] [layers, default 36]   (PSP_MODES=0,4: only those modes)
// Measured (NVIDIA H200, 2026-12-03, two runs; bench/gemm_notes.md has the
// table): the persistent modes 0.72-0.74 of the floor, the launch-a-phase
// modes 0.74-0.78, the engine's replayed step 0.78-0.79; one grid barrier 1.97 us.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.h"
#include "ops/cuda/mbarrier.cuh"

using bf16 = __nv_bfloat16;
using flashdraft::ops::cuda::bulk_copy;
using flashdraft::ops::cuda::mbar_arrive;
using flashdraft::ops::cuda::mbar_expect_tx;
using flashdraft::ops::cuda::mbar_init;
using flashdraft::ops::cuda::mbar_wait;
using flashdraft::ops::cuda::smem_u32;

constexpr int H = 4096, Q = 4096, KV = 1024, I = 12288, V = 151936, KEYS = 1024;
constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int CH = 16;  // 16-byte weight loads a lane has in flight: a warp reads 8 KB of a row at a time
constexpr int kMaxK = I;

enum PhaseKind { kQkv, kAttn, kO, kGateUp, kDown, kHead };
struct Phase {
  PhaseKind kind;
  const bf16* w = nullptr;  // rows x k, row-major
  int rows = 0, k = 0;
  const bf16* kv = nullptr;  // kAttn: the layer's K/V bytes
};

struct Params {
  const Phase* phases;
  float* res[2];  // residual stream, double-buffered (read one, write the other)
  float *qkv, *attn, *o, *gu, *down, *logits;
  float* kv_sum;  // per-block sums of the K/V read, so it is not optimized away
  unsigned* bar_count;
  unsigned* bar_gen;
};

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The threads that compute: all of a step_kernel block, the consumer warps
// (all but warp 0, the producer) of a stream_kernel block, which meet at
// named barrier 1 so that the producer never waits for them.
template <bool kStream>
__device__ __forceinline__ int ctid() {
  return kStream ? static_cast<int>(threadIdx.x) - 32 : static_cast<int>(threadIdx.x);
}
template <bool kStream>
__device__ __forceinline__ void csync() {
  if constexpr (kStream)
    asm volatile("bar.sync 1, %0;\n" ::"n"(kThreads) : "memory");
  else
    __syncthreads();
}

// Sense-reversing grid barrier for a cooperative launch.
template <bool kStream = false>
__device__ void grid_sync(const Params& p) {
  csync<kStream>();
  if (ctid<kStream>() == 0) {
    const unsigned gen = ld_acquire(p.bar_gen);
    __threadfence();
    if (atomicAdd(p.bar_count, 1u) == gridDim.x - 1) {
      *p.bar_count = 0;
      __threadfence();
      atomicAdd(p.bar_gen, 1u);
    } else {
      while (ld_acquire(p.bar_gen) == gen) {
      }
    }
    __threadfence();
  }
  csync<kStream>();
}

__device__ __forceinline__ uint4 ld_stream(const bf16* p) {
  return __ldcs(reinterpret_cast<const uint4*>(p));
}

// A warp's 8 KB of row `row` from weight `c0` on, a lane's 16 bytes in each of CH pieces.
__device__ __forceinline__ void load_chunk(const Phase& ph, int row, int c0, int lane, uint4 (&v)[CH]) {
  const bf16* w = ph.w + static_cast<int64_t>(row) * ph.k + c0;
#pragma unroll
  for (int i = 0; i < CH; ++i) v[i] = ld_stream(w + (i * 32 + lane) * 8);
}

template <bool kStream = false>
__device__ float block_sum(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = ctid<kStream>() / 32, lane = threadIdx.x % 32;
  csync<kStream>();
  if (lane == 0) scratch[warp] = v;
  csync<kStream>();
  float s = 0.f;
  for (int w = 0; w < kWarps; ++w) s += scratch[w];
  return s;
}

// The phase's input vector into shared memory: rmsnorm(residual + delta)
// (the residual's update written back by block 0), attention's output, or
// silu(gate) * up.
template <bool kStream = false>
__device__ void load_x(const Params& p, const Phase& ph, int update, float* xs, float* scratch) {
  const int t0 = ctid<kStream>();
  if (ph.kind == kQkv || ph.kind == kGateUp || ph.kind == kHead) {
    const float* r_in = (update & 1) ? p.res[1] : p.res[0];
    float* r_out = (update & 1) ? p.res[0] : p.res[1];
    const float* delta = ph.kind == kGateUp ? p.o : p.down;
    float ss = 0.f;
    for (int i = t0; i < H; i += kThreads) {
      const float r = r_in[i] + delta[i];
      xs[i] = r;
      ss += r * r;
      if (blockIdx.x == 0) r_out[i] = r;
    }
    const float inv = rsqrtf(block_sum<kStream>(ss, scratch) / H + 1e-6f);
    for (int i = t0; i < H; i += kThreads) xs[i] *= inv;
  } else if (ph.kind == kO) {
    for (int i = t0; i < Q; i += kThreads) xs[i] = p.attn[i];
  } else if (ph.kind == kDown) {
    for (int i = t0; i < I; i += kThreads) {
      const float g = p.gu[i], u = p.gu[I + i];
      xs[i] = g / (1.f + __expf(-g)) * u;
    }
  }
  csync<kStream>();
}

__device__ float* phase_out(const Params& p, PhaseKind k) {
  switch (k) {
    case kQkv: return p.qkv;
    case kO: return p.o;
    case kGateUp: return p.gu;
    case kDown: return p.down;
    default: return p.logits;
  }
}

// acc + w . x[0, 8): 8 bf16 weights (one 16-byte load) against 8 floats, in order.
__device__ __forceinline__ float dot8(const uint4& w, const float* x, float acc) {
  const float4 xa = *reinterpret_cast<const float4*>(x);
  const float4 xb = *reinterpret_cast<const float4*>(x + 4);
  const __nv_bfloat162* w2 = reinterpret_cast<const __nv_bfloat162*>(&w);
  const float2 w0 = __bfloat1622float2(w2[0]), w1 = __bfloat1622float2(w2[1]);
  const float2 w2f = __bfloat1622float2(w2[2]), w3 = __bfloat1622float2(w2[3]);
  acc = fmaf(w0.x, xa.x, acc);
  acc = fmaf(w0.y, xa.y, acc);
  acc = fmaf(w1.x, xa.z, acc);
  acc = fmaf(w1.y, xa.w, acc);
  acc = fmaf(w2f.x, xb.x, acc);
  acc = fmaf(w2f.y, xb.y, acc);
  acc = fmaf(w3.x, xb.z, acc);
  return fmaf(w3.y, xb.w, acc);
}

// y = W x, a warp a row (rows dealt round robin over the grid's warps);
// `v` may hold the first chunk of the warp's first row already.
__device__ void gemv(const Phase& ph, const float* xs, float* y, uint4 (&v)[CH], bool preloaded) {
  const int lane = threadIdx.x % 32;
  const int gw = blockIdx.x * kWarps + threadIdx.x / 32, tw = gridDim.x * kWarps;
  for (int row = gw; row < ph.rows; row += tw) {
    float acc = 0.f;
    for (int c0 = 0; c0 < ph.k; c0 += 32 * 8 * CH) {
      if (!preloaded) load_chunk(ph, row, c0, lane, v);
      preloaded = false;
#pragma unroll
      for (int i = 0; i < CH; ++i) acc = dot8(v[i], xs + c0 + (i * 32 + lane) * 8, acc);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
  }
}

// The stand-in attention: the layer's K/V read once over the grid, summed;
// its output is the q part of qkv (what o's input would be shaped like).
__device__ void attn(const Params& p, const Phase& ph, float* scratch) {
  const int64_t n = static_cast<int64_t>(KEYS) * KV * 2 / 8;  // uint4s
  const uint4* src = reinterpret_cast<const uint4*>(ph.kv);
  float s = 0.f;
  for (int64_t i = blockIdx.x * kThreads + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const uint4 u = ld_stream(reinterpret_cast<const bf16*>(src + i));
    s += __uint_as_float(u.x & 0x3f800000u);  // a cheap use of the bytes
  }
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) p.kv_sum[blockIdx.x] += s;
  for (int i = blockIdx.x * kThreads + threadIdx.x; i < Q; i += gridDim.x * kThreads) p.attn[i] = p.qkv[i];
}

// Phases [first, last) of the step; `mode` 0 plain, 1 PDL, 2 persistent, 3 persistent with the next chunk loaded before each barrier.
__global__ void __launch_bounds__(kThreads, 2) step_kernel(Params p, int first, int last, int mode, int update0) {
  extern __shared__ float xs[];
  __shared__ float scratch[kWarps];
  const int lane = threadIdx.x % 32;
  const int gw = blockIdx.x * kWarps + threadIdx.x / 32;
  uint4 v[CH];
  bool preloaded = false;
  int update = update0;
  if (mode == 1) {
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const Phase& ph = p.phases[first];
    if (ph.kind != kAttn && gw < ph.rows) {
      load_chunk(ph, gw, 0, lane, v);
      preloaded = true;
    }
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
  }
  for (int i = first; i < last; ++i) {
    const Phase& ph = p.phases[i];
    if (ph.kind == kAttn) {
      attn(p, ph, scratch);
    } else {
      load_x(p, ph, update, xs, scratch);
      if (ph.kind == kQkv || ph.kind == kGateUp || ph.kind == kHead) ++update;
      gemv(ph, xs, phase_out(p, ph.kind), v, preloaded && gw < ph.rows);
      preloaded = false;
    }
    if (i + 1 < last) {
      if (mode == 3) {
        // The next matrix's first chunk (past the K/V read, o's) rides through the barrier(s).
        const int nx = p.phases[i + 1].kind == kAttn ? i + 2 : i + 1;
        if (nx < last && gw < p.phases[nx].rows && !preloaded) {
          load_chunk(p.phases[nx], gw, 0, lane, v);
          preloaded = true;
        }
      }
      grid_sync(p);
    }
  }
}

// ---- the streaming variant: a producer warp keeps the weights coming ----
// Warp 0's lane 0 walks the block's share of every phase in order (8 KB
// items: 4096 weights of one row, or 8 KB of the layer's K/V) and copies each
// into a ring of kStreamStages slots with cp.async.bulk, waiting only for a slot to
// be free: weights do not depend on the step's data, so the ring fills with
// the next phase's weights while the consumer warps are still at the
// barrier before it. The consumers (warps 1-8) take the items round robin,
// add each item's dot product into its row's sum in shared memory, and meet
// the other blocks at a grid barrier between phases (mode 4: one
// cooperative launch) or at the launch boundary (mode 5: a launch a phase,
// each a programmatic dependent whose producer starts before
// griddepcontrol.wait).
constexpr int kItem = 4096;  // bf16s an item
// Item j goes to consumer warp j % kWarps and slot j % kStreamStages, so a
// slot's uses all fall to one warp, in order: a warp never waits on a slot's
// phase before the one ahead of it has completed (parity waits cannot tell
// a phase from the one two later). 16 slots (128 KB) fit one block a
// multiprocessor beside x.
constexpr int kStreamStages = 16;
static_assert(kStreamStages % kWarps == 0, "a slot's items must all go to one consumer warp");
constexpr int kMaxBlockRows = 2048;

// Block b's share of a phase: rows [r0, r1) (K/V: items [r0, r1)) and its items.
struct Share {
  int r0, r1, per_row, items;
};
__device__ Share share_of(const Phase& ph, int b, int g) {
  Share sh;
  const int64_t n = ph.kind == kAttn ? int64_t{KEYS} * KV * 2 / kItem : ph.rows;
  sh.r0 = static_cast<int>(n * b / g);
  sh.r1 = static_cast<int>(n * (b + 1) / g);
  sh.per_row = ph.kind == kAttn ? 1 : ph.k / kItem;
  sh.items = (sh.r1 - sh.r0) * sh.per_row;
  return sh;
}

__global__ void __launch_bounds__(kThreads + 32, 1) stream_kernel(Params p, int first, int last, int mode, int update0) {
  extern __shared__ __align__(128) unsigned char sm[];
  bf16* ring = reinterpret_cast<bf16*>(sm);
  float* xs = reinterpret_cast<float*>(sm + kStreamStages * kItem * 2);
  float* acc = xs + kMaxK;
  __shared__ __align__(8) uint64_t full[kStreamStages], empty[kStreamStages];
  __shared__ float scratch[kWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStreamStages; ++i) {
      mbar_init(&full[i], 1);
      mbar_init(&empty[i], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (mode == 5) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if (warp == 0) {
    if (lane == 0) {
      int64_t g = 0;
      for (int i = first; i < last; ++i) {
        const Phase& ph = p.phases[i];
        const Share sh = share_of(ph, blockIdx.x, gridDim.x);
        for (int j = 0; j < sh.items; ++j, ++g) {
          const int slot = static_cast<int>(g % kStreamStages);
          if (g >= kStreamStages) mbar_wait(&empty[slot], static_cast<int>((g / kStreamStages - 1) & 1));
          const bf16* src = ph.kind == kAttn ? ph.kv + int64_t{sh.r0 + j} * kItem
                                             : ph.w + (int64_t{sh.r0} + j / sh.per_row) * ph.k + (j % sh.per_row) * kItem;
          mbar_expect_tx(&full[slot], kItem * 2);
          bulk_copy(smem_u32(ring + slot * kItem), src, kItem * 2, &full[slot]);
        }
      }
    }
    return;
  }
  if (mode == 5) asm volatile("griddepcontrol.wait;\n" ::: "memory");
  const int cw = warp - 1, t0 = ctid<true>();
  int64_t g0 = 0;
  int update = update0;
  for (int i = first; i < last; ++i) {
    const Phase& ph = p.phases[i];
    if (i > first) grid_sync<true>(p);
    const Share sh = share_of(ph, blockIdx.x, gridDim.x);
    if (ph.kind != kAttn) {
      load_x<true>(p, ph, update, xs, scratch);
      if (ph.kind == kQkv || ph.kind == kGateUp || ph.kind == kHead) ++update;
    }
    for (int r = t0; r < sh.r1 - sh.r0 || r == 0; r += kThreads) acc[r] = 0.f;
    csync<true>();
    for (int j = cw; j < sh.items; j += kWarps) {
      const int64_t g = g0 + j;
      const int slot = static_cast<int>(g % kStreamStages);
      mbar_wait(&full[slot], static_cast<int>((g / kStreamStages) & 1));
      const bf16* it = ring + slot * kItem;
      float d = 0.f;
      if (ph.kind == kAttn) {
#pragma unroll
        for (int c = 0; c < kItem / 256; ++c) {
          const uint4 u = *reinterpret_cast<const uint4*>(it + (c * 32 + lane) * 8);
          d += __uint_as_float(u.x & 0x3f800000u);
        }
      } else {
        const float* x = xs + (j % sh.per_row) * kItem;
#pragma unroll
        for (int c = 0; c < kItem / 256; ++c) {
          const int e = (c * 32 + lane) * 8;
          d = dot8(*reinterpret_cast<const uint4*>(it + e), x + e, d);
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
      __syncwarp();
      if (lane == 0) {
        mbar_arrive(&empty[slot]);
        atomicAdd(&acc[ph.kind == kAttn ? 0 : j / sh.per_row], d);
      }
    }
    csync<true>();
    if (ph.kind == kAttn) {
      if (t0 == 0) p.kv_sum[blockIdx.x] += acc[0];
      for (int q = blockIdx.x * kThreads + t0; q < Q; q += gridDim.x * kThreads) p.attn[q] = p.qkv[q];
    } else {
      float* y = phase_out(p, ph.kind);
      for (int r = t0; r < sh.r1 - sh.r0; r += kThreads) y[sh.r0 + r] = acc[r];
    }
    g0 += sh.items;
  }
}

// `n` grid barriers and nothing else: what one costs.
__global__ void __launch_bounds__(kThreads, 2) barrier_kernel(Params p, int n) {
  for (int i = 0; i < n; ++i) grid_sync(p);
}

__global__ void fill_bf16(bf16* w, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    w[i] = __float2bfloat16((static_cast<float>(h & 0xffff) / 65536.f - 0.5f) * 0.02f);
  }
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int layers = argc > 2 ? std::atoi(argv[2]) : 36;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;

  // Weights and K/V.
  const int64_t per_layer = int64_t{Q + 2 * KV} * H + int64_t{H} * Q + int64_t{2 * I} * H + int64_t{H} * I;
  const int64_t kv_per_layer = int64_t{KEYS} * KV * 2;
  const int64_t n_w = per_layer * layers + int64_t{V} * H;
  bf16 *w = nullptr, *kv = nullptr;
  CK(cudaMalloc(&w, n_w * sizeof(bf16)));
  CK(cudaMalloc(&kv, kv_per_layer * layers * sizeof(bf16)));
  fill_bf16<<<1024, 256>>>(w, n_w, 1);
  fill_bf16<<<1024, 256>>>(kv, kv_per_layer * layers, 2);
  std::vector<Phase> phases;
  const bf16* cur = w;
  auto take = [&](PhaseKind k, int rows, int kdim) {
    phases.push_back({k, cur, rows, kdim, nullptr});
    cur += int64_t{rows} * kdim;
  };
  for (int l = 0; l < layers; ++l) {
    take(kQkv, Q + 2 * KV, H);
    phases.push_back({kAttn, nullptr, 0, 0, kv + kv_per_layer * l});
    take(kO, H, Q);
    take(kGateUp, 2 * I, H);
    take(kDown, H, I);
  }
  take(kHead, V, H);
  const int n_phases = static_cast<int>(phases.size());
  Phase* d_phases = nullptr;
  CK(cudaMalloc(&d_phases, phases.size() * sizeof(Phase)));
  CK(cudaMemcpy(d_phases, phases.data(), phases.size() * sizeof(Phase), cudaMemcpyHostToDevice));

  Params p{};
  p.phases = d_phases;
  float* acts = nullptr;
  const int64_t n_acts = 2 * H + (Q + 2 * KV) + Q + H + 2 * I + H + V + 4096 + 64;
  CK(cudaMalloc(&acts, n_acts * sizeof(float)));
  CK(cudaMemset(acts, 0, n_acts * sizeof(float)));
  float* a = acts;
  p.res[0] = a, a += H;
  p.res[1] = a, a += H;
  p.qkv = a, a += Q + 2 * KV;
  p.attn = a, a += Q;
  p.o = a, a += H;
  p.gu = a, a += 2 * I;
  p.down = a, a += H;
  p.logits = a, a += V;
  p.kv_sum = a, a += 4096;
  p.bar_count = reinterpret_cast<unsigned*>(a);
  p.bar_gen = p.bar_count + 1;
  std::vector<float> one(H, 1.f);
  CK(cudaMemcpy(p.res[0], one.data(), H * sizeof(float), cudaMemcpyHostToDevice));

  const int smem = kMaxK * sizeof(float);
  CK(cudaFuncSetAttribute(step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, step_kernel, kThreads, smem));
  per_sm = std::min(per_sm, 2);
  const int grid = sms * per_sm;
  const int smem_s = kStreamStages * kItem * 2 + (kMaxK + kMaxBlockRows) * static_cast<int>(sizeof(float));
  CK(cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_s));
  int per_sm_s = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_s, stream_kernel, kThreads + 32, smem_s));
  const int grid_s = sms * std::min(per_sm_s, 2);
  if (per_sm_s < 1) {
    std::fprintf(stderr, "the streaming kernel does not fit a multiprocessor\n");
    return 1;
  }

  const double copy_bw = measure_copy_bandwidth();
  const double bytes = static_cast<double>(n_w + kv_per_layer * layers) * sizeof(bf16);
  const double floor_ms = bytes / copy_bw * 1e3;
  std::printf(
      "%s, %d SMs, grid %d x %d threads (streaming: %d x %d, %d-slot ring); %d layers + lm head, %.2f GB a step; copy "
      "%.0f GB/s, floor %.3f ms\n",
      prop.name, sms, grid, kThreads, grid_s, kThreads + 32, kStreamStages, layers, bytes / 1e9, copy_bw / 1e9,
      floor_ms);

  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  // One launch of phases [first, last).
  auto launch = [&](int first, int last, int mode, int update0) {
    const bool stream = mode >= 4;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(stream ? grid_s : grid);
    cfg.blockDim = dim3(stream ? kThreads + 32 : kThreads);
    cfg.dynamicSmemBytes = stream ? smem_s : smem;
    cfg.stream = st;
    cudaLaunchAttribute attr[1];
    int na = 0;
    if (mode == 1 || mode == 5) {
      attr[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[na].val.programmaticStreamSerializationAllowed = 1;
      ++na;
    } else if (mode >= 2) {
      attr[na].id = cudaLaunchAttributeCooperative;
      attr[na].val.cooperative = 1;
      ++na;
    }
    cfg.attrs = attr;
    cfg.numAttrs = na;
    if (stream)
      CK(cudaLaunchKernelEx(&cfg, stream_kernel, p, first, last, mode, update0));
    else
      CK(cudaLaunchKernelEx(&cfg, step_kernel, p, first, last, mode, update0));
  };
  // Modes 0 and 1 as a replayed graph of one launch a phase (as the
  // engine replays its step); the persistent modes are one launch anyway.
  auto record = [&](int mode) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    int update = 0;
    for (int i = 0; i < n_phases; ++i) {
      launch(i, i + 1, mode, update);
      const PhaseKind k = phases[i].kind;
      if (k == kQkv || k == kGateUp || k == kHead) ++update;
    }
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphDestroy(g));
    return ge;
  };
  constexpr int kModes = 6;
  const char* names[kModes] = {"kernels",          "kernels_pdl",   "persistent", "persistent_pre",
                               "persistent_stream", "kernels_stream_pdl"};
  cudaGraphExec_t graphs[kModes] = {};
  for (int m : {0, 1, 5}) graphs[m] = record(m);
  auto run_step = [&](int mode) {
    if (graphs[mode]) {
      CK(cudaGraphLaunch(graphs[mode], st));
    } else {
      CK(cudaMemsetAsync(p.bar_count, 0, 2 * sizeof(unsigned), st));
      launch(0, n_phases, mode, 0);
    }
  };
  std::vector<std::vector<float>> times(kModes);
  std::vector<float> logits_first(kModes);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  // PSP_MODES=0,4 (say) runs only those modes.
  std::vector<bool> on(kModes, true);
  if (const char* only = std::getenv("PSP_MODES")) {
    on.assign(kModes, false);
    for (const char* c = only; *c; ++c)
      if (*c >= '0' && *c < '0' + kModes) on[*c - '0'] = true;
  }
  for (int r = 0; r < reps + 2; ++r) {
    for (int m = 0; m < kModes; ++m) {
      if (!on[m]) continue;
      // Every mode starts its step from the same residual.
      CK(cudaMemcpyAsync(p.res[0], one.data(), H * sizeof(float), cudaMemcpyHostToDevice, st));
      CK(cudaMemsetAsync(p.down, 0, H * sizeof(float), st));
      CK(cudaEventRecord(e0, st));
      run_step(m);
      CK(cudaEventRecord(e1, st));
      if (const cudaError_t e = cudaEventSynchronize(e1); e != cudaSuccess) {
        std::fprintf(stderr, "mode %s: %s\n", names[m], cudaGetErrorString(e));
        return 1;
      }
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 2) times[m].push_back(ms);
      CK(cudaMemcpy(&logits_first[m], p.logits + 12345, sizeof(float), cudaMemcpyDeviceToHost));
    }
  }
  std::printf("| mode | step ms (median, min-max of %d) | floor / step | logit[12345] |\n|---|---|---|---|\n", reps);
  for (int m = 0; m < kModes; ++m) {
    if (!on[m]) continue;
    std::vector<float> t = times[m];
    std::sort(t.begin(), t.end());
    const double med = t[t.size() / 2];
    std::printf("| %s | %.3f (%.3f-%.3f) | %.3f | %.6g |\n", names[m], med, t.front(), t.back(), floor_ms / med,
                logits_first[m]);
  }
  // Where the persistent step's time goes: one grid barrier alone, and each
  // matrix alone in one launch (a matrix's rows streamed by the same routine).
  {
    const int n = 2000;
    CK(cudaMemsetAsync(p.bar_count, 0, 2 * sizeof(unsigned), st));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(kThreads);
    cfg.stream = st;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, barrier_kernel, p, 10));
    CK(cudaEventRecord(e0, st));
    CK(cudaLaunchKernelEx(&cfg, barrier_kernel, p, n));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("grid barrier alone: %.2f us each (%d in one launch)\n", ms * 1e3 / n, n);
  }
  const char* kind_names[] = {"qkv", "attn", "o", "gate_up", "down", "lm_head"};
  for (int i : {0, 1, 2, 3, 4, n_phases - 1}) {
    const double b = phases[i].kind == kAttn ? static_cast<double>(kv_per_layer) * 2
                                             : static_cast<double>(phases[i].rows) * phases[i].k * 2;
    std::printf("%-8s alone, floor %7.1f us:", kind_names[phases[i].kind], b / copy_bw * 1e6);
    for (int mode : {0, 5}) {
      std::vector<float> t;
      for (int r = 0; r < 12; ++r) {
        CK(cudaEventRecord(e0, st));
        launch(i, i + 1, mode, 0);
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 2) t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      std::printf("  %s %8.1f us (%.3f)", mode == 0 ? "warp a row" : "streamed", t[t.size() / 2] * 1e3,
                  b / copy_bw * 1e3 / t[t.size() / 2]);
    }
    std::printf("\n");
  }
  return 0;
}
