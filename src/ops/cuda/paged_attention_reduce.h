#pragma once
// The split reduce of the CUDA paged attention: when a call cut rows' key
// ranges into several CTA groups (small batches, for parallelism), each CTA
// wrote its splits' partial states, and this kernel folds them into the
// output, in split order, by attention_fold.cuh's arithmetic: the bits the
// kernel's own fold gives a row whose range one CTA walks.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/cuda/attention_splits.h"

namespace flashdraft::ops::cuda {

// Partials as the attention kernel lays them out: part_o [slots][n_rows][n_heads][head_dim]
// (a split's P.V sums, unnormalised), part_ml [slots][n_rows][n_heads] (its
// running max in the log2 domain, -inf when empty, and its sum).
struct SplitReduceParams {
  const float* part_o;
  const float2* part_ml;
  __nv_bfloat16* out;
  int64_t out_ld;
  int n_rows, n_heads, slots;
  // To bound a row's slots by its position: a recorded step's slots cover
  // its context bucket, mostly past the row's keys (empty, but each a load).
  const int32_t* positions;
  SplitTiers splits;
  int causal, window, max_rows;
};

// One CTA of head_dim threads per (row, head), launched as a programmatic
// dependent of the attention grid (it waits for that grid's writes). Throws
// flashdraft::Error when the launch fails.
void launch_split_reduce(const SplitReduceParams& r, int head_dim, cudaStream_t stream);

}  // namespace flashdraft::ops::cuda
