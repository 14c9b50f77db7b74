// Backend::sample on the GPU: one block per row, no sort. Each token's weight
// comes from ops/sample_math.h, bit for bit the CPU reference's; only the
// order in which doubles are added differs (see Backend::sample).
//
// Passes over the row (it stays in L2 between them):
//   1. max (first argmax), min, and whether any logit is NaN or +inf.
//   2. top-k: the k-th largest logit by radix search over the order keys of
//      the logits, counting tokens per 5-bit digit, most significant first.
//   3. top-p: the same search over the bit patterns of the weights (positive
//      floats order like their bits), adding weights instead of counting:
//      the largest weight v whose tokens with weight >= v hold top_p of the
//      top-k survivors' total. Ties at either boundary fall on one key, so
//      they are all kept, as in the reference.
//   4. the draw: the kept weights summed per 32-token chunk; the chunk and
//      then the token where the running sum passes u * total, in id order.
// Each digit's histogram is private to its thread (bin-major in shared
// memory, so a warp's 32 updates hit 32 consecutive slots): no atomics, and
// double sums whose order depends on nothing but the vocabulary size.
#include <cfloat>
#include <climits>
#include <cstdint>
#include <string>

#include "ops/cuda/checks.h"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"
#include "ops/sample_math.h"

namespace flashdraft::ops::cuda {
namespace {

namespace sm = sample_math;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kDigitBits = 5;
constexpr int kBins = 1 << kDigitBits;
static_assert(kBins == 2 * kWarps, "the bin totals give each warp two bins");
constexpr size_t kSharedBytes = sizeof(double) * kBins * kThreads;  // 128 KiB
// The draw's chunk sums (one per 32 tokens) reuse the histogram memory.
constexpr int64_t kMaxVocab = int64_t{kBins} * kThreads * 32;

__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// f(j, x[j]) for this thread's elements (j = threadIdx.x + i * kThreads) of
// the n at x: a row's tokens, or its float4s. Every pass is bound by L2
// latency unless a thread has several loads in flight: kLoads are issued
// before any is used.
constexpr int kLoads = 8;
template <class T, class F>
__device__ __forceinline__ void for_each_token(const T* __restrict__ x, int n, F f) {
  int j = threadIdx.x;
  for (; j + (kLoads - 1) * kThreads < n; j += kLoads * kThreads) {
    T v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) v[u] = x[j + u * kThreads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) f(j + u * kThreads, v[u]);
  }
  for (; j < n; j += kThreads) f(j, x[j]);
}
__device__ __forceinline__ void take_better(float& best, int& best_i, float v, int i) {
  if (v > best || (v == best && i < best_i)) {
    best = v;
    best_i = i;
  }
}

struct Stats {
  float max, min;
  int argmax;
  bool bad;
};

// for_each_token in 16-byte loads (4x the bytes in flight; a greedy row
// reads nothing else) where the row is 16-byte aligned, in another order: for
// results that do not depend on it.
template <class F>
__device__ __forceinline__ void for_each_token_unordered(const float* __restrict__ x, int vocab, F f) {
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0) return for_each_token(x, vocab, f);
  const int n4 = vocab / 4;
  for_each_token(reinterpret_cast<const float4*>(x), n4, [&](int q, float4 v) {
    f(4 * q, v.x);
    f(4 * q + 1, v.y);
    f(4 * q + 2, v.z);
    f(4 * q + 3, v.w);
  });
  for (int t = 4 * n4 + static_cast<int>(threadIdx.x); t < vocab; t += kThreads) f(t, x[t]);
}

// Pass 1, every thread gets the block's result (the same whatever order the
// tokens come in: ties go to the lower id).
__device__ Stats row_stats(const float* x, int vocab) {
  __shared__ float s_best[kWarps], s_min[kWarps];
  __shared__ int s_best_i[kWarps], s_bad[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float best = -INFINITY, lo = INFINITY;
  int best_i = INT_MAX, bad = 0;
  for_each_token_unordered(x, vocab, [&](int j, float v) {
    bad |= (v != v) | (v == INFINITY);
    take_better(best, best_i, v, j);
    lo = fminf(lo, v);
  });
  for (int o = 16; o > 0; o /= 2) {
    take_better(best, best_i, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, best_i, o));
    lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    bad |= __shfl_xor_sync(0xffffffffu, bad, o);
  }
  if (lane == 0) {
    s_best[warp] = best;
    s_best_i[warp] = best_i;
    s_min[warp] = lo;
    s_bad[warp] = bad;
  }
  __syncthreads();
  best = lane < kWarps ? s_best[lane] : -INFINITY;
  best_i = lane < kWarps ? s_best_i[lane] : INT_MAX;
  lo = lane < kWarps ? s_min[lane] : INFINITY;
  bad = lane < kWarps ? s_bad[lane] : 0;
  for (int o = 16; o > 0; o /= 2) {
    take_better(best, best_i, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, best_i, o));
    lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    bad |= __shfl_xor_sync(0xffffffffu, bad, o);
  }
  return Stats{best, lo, best_i, bad != 0 || best_i == INT_MAX || best == -INFINITY};
}

// The largest key K such that the tokens elem(x[j], key, weight) admits with
// key >= K weigh at least target_of(their total weight) together. Only keys that agree with
// `prefix` on the bits of `mask` exist; the search resolves bits top .. 0.
template <class Elem, class Target>
__device__ uint32_t radix_search(const float* __restrict__ x, int vocab, uint32_t prefix, uint32_t mask, int top, Elem elem, Target target_of,
                                 double* hist) {
  __shared__ double s_bin[kBins];
  __shared__ double s_above, s_target;
  __shared__ uint32_t s_prefix, s_mask;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  double above = 0, target = 0;
  for (int hi = top, first = 1; hi >= 0; first = 0) {
    const int lo = hi - kDigitBits + 1 > 0 ? hi - kDigitBits + 1 : 0;
    const uint32_t digit = (1u << (hi - lo + 1)) - 1u;
    for (int b = 0; b < kBins; ++b) hist[b * kThreads + tid] = 0.0;
    for_each_token(x, vocab, [&](int, float v) {
      uint32_t key;
      double w;
      if (elem(v, key, w) && (key & mask) == prefix) hist[((key >> lo) & digit) * kThreads + tid] += w;
    });
    __syncthreads();
    for (int b = warp; b < kBins; b += kWarps) {
      double s = 0;
      for (int t = lane; t < kThreads; t += 32) s += hist[b * kThreads + t];
      s = warp_sum_d(s);
      if (lane == 0) s_bin[b] = s;
    }
    __syncthreads();
    if (tid == 0) {
      if (first) {
        double total = 0;
        for (int b = 0; b < kBins; ++b) total += s_bin[b];
        target = target_of(total);
      }
      int chosen = -1;
      double sum = above;
      for (int b = static_cast<int>(digit); b >= 0; --b) {
        if (sum + s_bin[b] >= target) {
          chosen = b;
          break;
        }
        sum += s_bin[b];
      }
      if (chosen < 0) {
        // Rounding: this digit's sums fell a hair short of the last one's.
        // The lowest non-empty bin stands in for the one that reaches it.
        sum = above;
        for (int b = static_cast<int>(digit); b >= 0; --b) {
          if (s_bin[b] > 0) chosen = b;
        }
        if (chosen < 0) chosen = 0;
        for (int b = static_cast<int>(digit); b > chosen; --b) sum += s_bin[b];
      }
      s_prefix = prefix | (static_cast<uint32_t>(chosen) << lo);
      s_mask = mask | (digit << lo);
      s_above = sum;
      s_target = target;
    }
    __syncthreads();
    prefix = s_prefix;
    mask = s_mask;
    above = s_above;
    target = s_target;
    hi = lo - 1;
  }
  return prefix;
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* __restrict__ logits, int64_t ld, int vocab, const int32_t* __restrict__ rows,
                  int64_t rows_ld, int32_t* __restrict__ out, int64_t out_ld) {
  extern __shared__ double hist[];
  const float* x = logits + blockIdx.x * ld;
  SampleRow p;
  {
    const int32_t* w = rows + blockIdx.x * rows_ld;
    p.temperature = __int_as_float(w[0]);
    p.top_k = w[1];
    p.top_p = __int_as_float(w[2]);
    p.min_p = __int_as_float(w[3]);
    p.seed_lo = static_cast<uint32_t>(w[4]);
    p.seed_hi = static_cast<uint32_t>(w[5]);
    p.position = w[6];
  }
  const int tid = threadIdx.x;
  const Stats st = row_stats(x, vocab);
  if (st.bad || !(p.temperature > 0)) {
    if (tid == 0) out[blockIdx.x * out_ld] = st.bad ? -1 : st.argmax;
    return;
  }
  const float top_logit = st.max, inv_t = sm::reciprocal(p.temperature);

  // 2. top-k: keep logits >= kth.
  float kth = -INFINITY;
  const uint32_t kmin = sm::order_key(st.min), kmax = sm::order_key(top_logit);
  if (p.top_k > 0 && p.top_k < vocab && kmin != kmax) {
    const int top = 31 - __clz(kmin ^ kmax);
    const uint32_t mask = ~((2u << top) - 1u);
    const double k = p.top_k;
    const uint32_t key = radix_search(
        x, vocab, kmax & mask, mask, top,
        [&](float l, uint32_t& key, double& w) {
          key = sm::order_key(l);
          w = 1.0;
          return true;
        },
        [&](double) { return k; }, hist);
    kth = sm::key_value(key);
  }

  // 3. top-p, then min-p: keep weights >= threshold.
  float threshold = 0.0f;
  if (p.top_p < 1.0f) {
    const double top_p = p.top_p;
    const uint32_t key = radix_search(
        x, vocab, 0u, 0xC0000000u, 29,  // weights lie in [0, 1]: bits 31 and 30 are clear
        [&](float l, uint32_t& key, double& w) {
          if (l < kth) return false;
          const float e = sm::weight(l, top_logit, inv_t);
          if (!(e > 0.0f)) return false;
          key = sm::float_to_bits(e);
          w = e;
          return true;
        },
        [&](double total) { return top_p * total; }, hist);
    threshold = sm::bits_to_float(key);
  }
  if (p.min_p > threshold) threshold = p.min_p;
  auto kept = [&](float l) {
    if (l < kth) return 0.0f;
    const float e = sm::weight(l, top_logit, inv_t);
    return e >= threshold ? e : 0.0f;
  };

  // 4. The draw. Chunk sums (warps stride over chunks) and the last kept id.
  __shared__ double s_local[kThreads];
  __shared__ int s_last[kWarps];
  __shared__ int s_token;
  const int lane = tid % 32, warp = tid / 32;
  const int n_chunks = (vocab + 31) / 32;
  double* chunk = hist;
  int last = -1;
  __syncthreads();  // the searches' last reads of hist are done
  for (int c0 = warp; c0 < n_chunks; c0 += kLoads * kWarps) {
    float v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const int j = (c0 + u * kWarps) * 32 + lane;
      v[u] = j < vocab ? x[j] : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const int c = c0 + u * kWarps;
      if (c >= n_chunks) break;
      const float e = kept(v[u]);
      if (e > 0.0f) last = c * 32 + lane;
      const double s = warp_sum_d(e);
      if (lane == 0) chunk[c] = s;
    }
  }
  for (int o = 16; o > 0; o /= 2) last = max(last, __shfl_xor_sync(0xffffffffu, last, o));
  if (lane == 0) s_last[warp] = last;
  const int per = (n_chunks + kThreads - 1) / kThreads;
  const int first = min(tid * per, n_chunks), end = min(first + per, n_chunks);
  __syncthreads();
  double local = 0;
  for (int c = first; c < end; ++c) local += chunk[c];
  s_local[tid] = local;
  __syncthreads();
  if (tid == 0) {
    for (int w = 0; w < kWarps; ++w) last = max(last, s_last[w]);
    double total = 0;
    for (int t = 0; t < kThreads; ++t) total += s_local[t];
    const uint64_t seed = static_cast<uint64_t>(p.seed_hi) << 32 | p.seed_lo;
    const double target = sm::uniform(seed, static_cast<uint32_t>(p.position), 0) * total;
    // The thread range, then the chunk, whose running sum passes the target.
    double sum = 0;
    int t = 0;
    while (t < kThreads && !(target < sum + s_local[t])) sum += s_local[t++];
    int found = -1;
    if (t < kThreads) {
      const int b0 = min(t * per, n_chunks), b1 = min(b0 + per, n_chunks);
      double at = sum;
      for (int c = b0; c < b1; ++c) {
        if (chunk[c] <= 0) continue;
        found = c;  // rounding may leave the walk short: the last non-empty chunk then
        sum = at;
        if (target < at + chunk[c]) break;
        at += chunk[c];
      }
    }
    s_token = found < 0 ? -1 - last : found;  // >= 0: a chunk; < 0: -1 - the fallback token
    s_local[0] = sum;                            // the running sum before that chunk
    s_local[1] = target;
  }
  __syncthreads();
  if (warp != 0) return;
  const int c = s_token;
  if (c < 0) {
    if (lane == 0) out[blockIdx.x * out_ld] = -1 - c;
    return;
  }
  const double before = s_local[0], target = s_local[1];
  const int j = c * 32 + lane;
  const float e = j < vocab ? kept(x[j]) : 0.0f;
  double incl = e;
  for (int o = 1; o < 32; o *= 2) {
    const double up = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += up;
  }
  const unsigned passed = __ballot_sync(0xffffffffu, e > 0.0f && target < before + incl);
  const unsigned positive = __ballot_sync(0xffffffffu, e > 0.0f);
  // positive is never empty: the chunk's sum is > 0.
  const int pick = passed ? __ffs(passed) - 1 : 31 - __clz(positive);
  if (lane == 0) out[blockIdx.x * out_ld] = c * 32 + pick;
}

}  // namespace

void sample(const Tensor& logits, const Tensor& rows, const Tensor& out, cudaStream_t stream) {
  expect_tensor(logits, DType::F32, "sample", "logits");
  expect_tensor(rows, DType::I32, "sample", "rows");
  expect_tensor(out, DType::I32, "sample", "out");
  expect_shape(rows, logits.rows, SampleRow::kWords, "sample", "rows");
  expect_shape(out, logits.rows, 1, "sample", "out");
  if (logits.rows == 0) return;
  if (logits.cols < 1 || logits.cols > kMaxVocab)
    fail("sample", "logits rows of " + std::to_string(logits.cols) + " tokens; this kernel takes 1 to " +
                       std::to_string(kMaxVocab));
  static const bool sized = [] {
    check(cudaFuncSetAttribute(sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(kSharedBytes)),
          "sample: cudaFuncSetAttribute");
    return true;
  }();
  (void)sized;
  sample_kernel<<<static_cast<unsigned>(logits.rows), kThreads, kSharedBytes, stream>>>(
      logits.as<float>(), logits.ld, static_cast<int>(logits.cols), rows.as<int32_t>(), rows.ld, out.as<int32_t>(),
      out.ld);
  check(cudaGetLastError(), "sample kernel launch");
}

}  // namespace flashdraft::ops::cuda
