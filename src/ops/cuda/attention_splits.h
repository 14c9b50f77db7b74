#pragma once
// Where a row's key range restarts its softmax, for the CUDA paged attention
// (paged_attention.cu's top comment says why the positions are fixed), and
// how a launch groups those splits into CTAs. Host and device share it: the
// launch rules (paged_attention_plan.cpp) size the grid by it, the kernels
// find their keys and partial slots by it.
#include <cuda_runtime_api.h>

// The kernels unroll the tier loops; a host compiler has no such pragma.
#ifdef __CUDACC__
#define FD_SPLITS_UNROLL _Pragma("unroll")
#else
#define FD_SPLITS_UNROLL
#endif

namespace flashdraft::ops::cuda {

// Keys per K/V pipeline tile; every split and group length is a multiple.
constexpr int kAttnTileKeys = 64;

// Where splits start: fixed key positions (batch invariance, as
// paged_attention.cu's top comment says), short near the start and longer
// further on. A short context gets as many splits as a batch-1 call needs
// CTAs (decode at 1k keys: 8 splits a kv head, 11 us on H100 against 17.6
// with 512-key splits; a 16-row block 16.3 against 28.3), a long one longer
// splits, which fold less often (a fold per 128 keys made decode at 32k 84
// us against 62 on H100; on H200, decode at batch 1 and 32k took 45.9 us
// with 1024-key splits against 49.8 with 512). `bench_attention --explore`
// measures uniform lengths for comparison.
struct SplitTiers {
  static constexpr int kTiers = 4;
  // Tier i holds the keys [end[i - 1], end[i]) (from 0; the last has no end)
  // in splits of len[i] keys; first[i] is its first split's index. Every
  // length a multiple of kAttnTileKeys, every end a multiple of its tier's
  // length.
  int len[kTiers] = {128, 256, 512, 1024};
  int end[kTiers - 1] = {1024, 4096, 16384};
  int first[kTiers] = {0, 8, 20, 44};
  __host__ __device__ constexpr int tier_start(int i) const { return i == 0 ? 0 : end[i - 1]; }
  // Whether first[] counts the splits of the tiers before each.
  constexpr bool consistent() const {
    for (int i = 0; i + 1 < kTiers; ++i)
      if (first[i + 1] != first[i] + (end[i] - tier_start(i)) / len[i]) return false;
    return first[0] == 0;
  }
  // The split that holds key k.
  __host__ __device__ int of(int k) const {
FD_SPLITS_UNROLL
    for (int i = 0; i + 1 < kTiers; ++i)
      if (k < end[i]) return first[i] + (k - tier_start(i)) / len[i];
    return first[kTiers - 1] + (k - tier_start(kTiers - 1)) / len[kTiers - 1];
  }
  // The first key of split i.
  __host__ __device__ int begin(int s) const {
FD_SPLITS_UNROLL
    for (int i = 0; i + 1 < kTiers; ++i)
      if (s < first[i + 1]) return tier_start(i) + (s - first[i]) * len[i];
    return tier_start(kTiers - 1) + (s - first[kTiers - 1]) * len[kTiers - 1];
  }
  int longest() const { return len[kTiers - 1]; }
};
static_assert(SplitTiers{}.consistent(), "SplitTiers: first[] does not match the tier ends and lengths");
// Groups of keys for a range of `range` keys cut into at most `most` groups
// (a last one may take a short tail past them): the shortest power-of-two
// multiple of the first split length (plan_groups). The host and the kernel
// (refitting a recorded step's groups to the real range) share it.
__host__ __device__ inline int group_keys_for(int range, int most, int first_split, int cap) {
  int keys = first_split;
  const int m = most > 1 ? most : 1;
  while (keys < cap && range / keys > m) keys *= 2;
  return keys;
}
// Both steps of the host's rule: one CTA an SM while that leaves a group at
// most 8 tiles of kAttnTileKeys keys, else as many as fit.
__host__ __device__ inline int fit_group_keys(int range, const int (&most)[2], int first_split, int cap) {
  const int keys = group_keys_for(range, most[0], first_split, cap);
  return keys > 8 * kAttnTileKeys ? group_keys_for(range, most[1], first_split, cap) : keys;
}

// Every split `keys` long (a benchmark hook's tiers).
inline SplitTiers uniform_tiers(int keys) {
  SplitTiers t;
  for (int i = 0; i < SplitTiers::kTiers; ++i) t.len[i] = keys, t.first[i] = 0;
  for (int i = 0; i + 1 < SplitTiers::kTiers; ++i) t.end[i] = 0;
  return t;
}

}  // namespace flashdraft::ops::cuda

#undef FD_SPLITS_UNROLL
