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
// The workspace grows with cudaMalloc (never shrinks) the first time a call
// needs more split-KV scratch than it holds; warm up with the largest batch
// before capturing a CUDA graph.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/backend.h"

namespace flashdraft::ops::cuda {

// Scratch the attention keeps between calls (split-KV partial results). Grown
// by paged_attention only when a call needs more; owned by the backend.
struct AttentionWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
  AttentionWorkspace() = default;
  AttentionWorkspace(const AttentionWorkspace&) = delete;
  AttentionWorkspace& operator=(const AttentionWorkspace&) = delete;
  ~AttentionWorkspace();
};

void paged_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                     const AttnBatch& batch, const AttentionMask& mask, int64_t n_heads, int64_t n_kv_heads,
                     int64_t head_dim, float scale, AttentionWorkspace& workspace, cudaStream_t stream);

// Test and benchmark hook: when > 0, every later call splits each sequence's
// key range into (about) this many pieces instead of choosing by occupancy, so
// tests can drive both the single-pass and the split-KV + reduce paths. 0
// restores the automatic choice. Not thread-safe; not for production use.
void set_paged_attention_forced_splits(int splits);

// What the last paged_attention call on this thread chose (for benchmark logs).
struct PagedAttentionPlan {
  int rows_per_cta = 0;  // 16 * warps along M (GQA heads x query rows, flattened)
  int m_tiles = 0;       // CTAs along M per (sequence, kv head)
  int splits = 0;        // CTAs along the key range per (sequence, kv head, m tile)
  int chunk_keys = 0;    // keys per split
  int ctas = 0;          // attention grid size (a reduce kernel follows when splits > 1)
  int stages = 0;        // depth of the K/V cp.async ring
};
PagedAttentionPlan last_paged_attention_plan();

}  // namespace flashdraft::ops::cuda
