#pragma once
// The CUDA paged attention family: one entry point for decode rows, verify
// blocks, DFlash drafter blocks and prefill chunks, with the three mask kinds
// of ops::AttentionMask. Semantics exactly as Backend::paged_attention in
// ops/backend.h; q, out and the KV layers are bf16, accumulation is f32.
//
// Requirements checked on the host (flashdraft::Error otherwise): bf16 CUDA
// tensors, head_dim 64 or 128, n_heads a multiple of n_kv_heads, every row
// stride (q.ld, out.ld, k/v_cache.ld) a multiple of 8 elements and the data
// pointers 16-byte aligned (the kernel moves 16-byte vectors).
//
// Batch invariant: a row's output bits depend only on its query, the keys it
// sees and the mask, never on the call's other rows or sequences (decode,
// verify block, prefill chunk of any size and start, any batch);
// tests/backend_ops/batch_invariance_test.cpp checks it.
//
// batch.max_keys may overstate the longest key range (a recorded step states
// its context bucket): the grid is sized for it, and each CTA refits its key
// groups to its own range. batch.positions, where given, must agree with
// pos0 and q_start (Backend's contract): the split reduce bounds each row's
// partials by its position.
//
// The workspace grows with cudaMalloc (never shrinks) the first time a call
// needs more partials scratch than it holds; warm up with the largest batch
// before capturing a CUDA graph.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "ops/backend.h"

namespace flashdraft::ops::cuda {

// Scratch the attention keeps between calls (per-split partial results). Grown
// by paged_attention only when a call needs more; owned by the backend.
// Partials of split key ranges. A grown workspace keeps its old allocations
// until it is destroyed: a captured graph may still write there.
struct AttentionWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
  std::vector<void*> retired;
  AttentionWorkspace() = default;
  AttentionWorkspace(const AttentionWorkspace&) = delete;
  AttentionWorkspace& operator=(const AttentionWorkspace&) = delete;
  ~AttentionWorkspace();
};

void paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                     const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads, int64_t n_kv_heads,
                     int64_t head_dim, float scale, AttentionWorkspace& workspace, cudaStream_t stream);

// Test and benchmark hook: when > 0, every later call cuts each sequence's key
// range into (at most) this many CTA groups of whole splits instead of
// choosing by occupancy, so tests can drive both the in-kernel fold and the
// partials + reduce path (the results are bit-identical either way). 0
// restores the automatic choice. Not thread-safe; not for production use.
void set_paged_attention_forced_splits(int groups);

// Benchmark hook: keys per split, the same for every split (rounded to a
// multiple of 64; 0 restores the default: 128 keys up to key 1024, 256 up to
// 4096, then 512). Rows keep their bits only among calls with the same value:
// never change it in a running engine. Not thread-safe.
void set_paged_attention_split_keys(int keys);

// Test and benchmark hook: every later call uses this warp layout (warps
// along M x warps sharing each K/V tile: 1x4, 2x2, 4x2, 4x1 or 8x1) instead of
// choosing by M and batch; 0 x 0 restores the automatic choice. The layout
// changes no bits (tests compare). Not thread-safe; not for production use.
void set_paged_attention_forced_layout(int warps_m, int warps_k);

// What the last paged_attention call on this thread chose (for benchmark logs).
struct PagedAttentionPlan {
  int rows_per_cta = 0;  // 16 * warps along M (GQA heads x query rows, flattened)
  int warps_k = 0;       // warps sharing each K/V tile of those rows
  int m_tiles = 0;       // CTAs along M per (sequence, kv head)
  int splits = 0;        // CTA groups along the key range (1: the fold runs in the kernel, no reduce)
  int chunk_keys = 0;    // keys per CTA group (its first)
  int ctas = 0;          // attention grid size (a reduce kernel follows when splits > 1)
  int stages = 0;        // depth of the K/V cp.async ring
  int split_keys = 0;    // keys of the first split (the fixed positions a row's sums restart at)
  int ctas_per_sm = 0;   // CTAs a multiprocessor may hold
};
PagedAttentionPlan last_paged_attention_plan();

// What paged_attention would launch for this batch on a device of `sms`
// multiprocessors, worked out on the host alone (no device is touched; the
// hooks above apply): for tests of the launch rules.
PagedAttentionPlan plan_paged_attention(const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads,
                                        int64_t n_kv_heads, int sms);

}  // namespace flashdraft::ops::cuda
