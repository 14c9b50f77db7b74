#pragma once
// Launchers of the CUDA backend's ops, one per .cu file in this folder. Each
// checks its views on the host (flashdraft::Error naming the op and the
// argument) and enqueues its kernel on `stream`; semantics are those of the
// same-named Backend op in ops/backend.h.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/backend.h"

namespace flashdraft::ops::cuda {

void embedding(const Tensor& table, const Tensor& ids, const Tensor& out, float scale, cudaStream_t stream);
void rmsnorm(const Tensor& x, const Tensor& w, const Tensor& y, float eps, cudaStream_t stream);
void add_rmsnorm(const Tensor& residual, const Tensor& delta, const Tensor& w, const Tensor& y, float eps,
                 const Tensor* residual_out, cudaStream_t stream);
void rope_store_kv(const Tensor& qkv, int64_t heads, int64_t kv_heads, int64_t head_dim, const Tensor* q_norm,
                   const Tensor* k_norm, const int32_t* positions, const Rope& rope, float eps, const int32_t* slots,
                   const Tensor& k_cache, const Tensor& v_cache, cudaStream_t stream);
// rope_store_kv's argument checks (throws), and how many consecutive elements
// of a head its kernel gives each lane for these views: head_dim / 32 (the
// layout of rope_math.cuh, which the qkv GEMM's fused epilogue shares) where
// their alignment allows.
void check_rope_store_kv(const Tensor& qkv, int64_t heads, int64_t kv_heads, int64_t head_dim, const Tensor* q_norm,
                         const Tensor* k_norm, const int32_t* positions, const Rope& rope, const int32_t* slots,
                         const Tensor& k_cache, const Tensor& v_cache);
int rope_lane_elems(const Tensor& qkv, int64_t head_dim, const Tensor* q_norm, const Tensor* k_norm,
                    const Tensor& k_cache, const Tensor& v_cache);
// run > 0: gate_up holds runs of `run` gate columns, each followed by the
// matching up columns (the product of a Layout::GluTiles weight).
void silu_glu(const Tensor& gate_up, const Tensor& out, cudaStream_t stream, int64_t run = 0);
void gather_rows(const Tensor& src, const int32_t* rows, const Tensor& dst, cudaStream_t stream);
void scatter_rows(const Tensor& src, const int32_t* rows, const Tensor& dst, cudaStream_t stream);
void softcap(const Tensor& x, float cap, cudaStream_t stream);
void argmax(const Tensor& x, const Tensor& out, cudaStream_t stream);
void argmax_key(const Tensor& x, int64_t offset, const Tensor& keys, cudaStream_t stream);
void sample(const Tensor& logits, const Tensor& rows, const Tensor& out, cudaStream_t stream);
void accept(const Tensor& logits, const Tensor& rows, const Tensor& seq_start, const Tensor& tokens, const Tensor& out,
            cudaStream_t stream);
void penalize(const Tensor& logits, const Tensor& rows, const Tensor& items, const Tensor& drafts, cudaStream_t stream);
void carry_forward(const Tensor& verdicts, const Tensor& lag, const Tensor& fixes, cudaStream_t stream);
// Backend::copy from f32 to bf16 (same-dtype copies are cudaMemcpy2D).
void convert_rows(const Tensor& src, const Tensor& dst, cudaStream_t stream);
void fill_nan(const Tensor& t, cudaStream_t stream);
void fill_uniform(const Tensor& t, uint64_t seed, float lo, float hi, cudaStream_t stream);
// y[r, :] += bias: matmul's fallback when cuBLASLt's bias epilogue cannot take
// the dtype pair (bias dtype other than y's).
void add_bias(const Tensor& y, const Tensor& bias, cudaStream_t stream);

}  // namespace flashdraft::ops::cuda
