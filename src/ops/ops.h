#pragma once
// The op interface every backend implements. Signatures stay plain (pointers
// + sizes, row-major, fp32) so the CUDA backend can declare the same list in
// namespace flashdraft::ops::cuda taking device pointers, and one parity
// harness can run both. ops::cpu is the reference: each op is checked against
// a naive double-precision version in tests/ops/.
//
// Layouts follow Hugging Face: a Linear weight is [out, in]; per-token head
// vectors are [rows, heads, head_dim]; a KV cache is [tokens, kv_heads, head_dim].
#include <cstdint>

namespace flashdraft::ops::cpu {

// Threads OpenBLAS uses for GEMM. n <= 0 leaves OpenBLAS's own choice, which
// honours OPENBLAS_NUM_THREADS.
void set_num_threads(int n);
int num_threads();

// y[n, out] = x[n, in] · w[out, in]^T  (+ bias[out] when bias != nullptr).
// y must not alias x or w.
void matmul_wt(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
               int64_t out);

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight. y may equal x.
void rmsnorm(const float* x, const float* weight, float* y, int64_t rows, int64_t dim, float eps);

// powers[i] = theta^(2i / head_dim) for i < head_dim / 2, and inv_freq its
// reciprocal, computed with the same float32 roundings as Hugging Face's RoPE
// init, so angles (and hence logits) match the reference at long positions.
// Scaled RoPE types start from these (model/rope_scaling).
void rope_base_powers(double theta, int64_t head_dim, float* powers);
void rope_inv_freq(double theta, int64_t head_dim, float* inv_freq);

// Rotates x[rows, heads, head_dim] in place; row r is at positions[r]. Neox
// layout (Qwen, Llama in HF): element i pairs with i + head_dim / 2. cos and
// sin are multiplied by attention_factor (yarn's; 1 otherwise).
void rope_neox(float* x, const int64_t* positions, const float* inv_freq, int64_t rows,
               int64_t heads, int64_t head_dim, float attention_factor = 1.0f);

// out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + exp(-x)). out may equal gate or up.
void silu_glu(const float* gate, const float* up, float* out, int64_t n);

// out[r, :] = table[ids[r], :]. Throws flashdraft::Error for an id outside [0, vocab).
void embedding(const float* table, int64_t vocab, int64_t dim, const int32_t* ids, int64_t n,
               float* out);

// y[i] += x[i] (residual connections).
void add(float* y, const float* x, int64_t n);

// Index of the largest element; the first one on ties (as torch.argmax on CPU).
int64_t argmax(const float* x, int64_t n);

}  // namespace flashdraft::ops::cpu

// ---- Paged attention (the serving engine's target forward) ----
namespace flashdraft::ops::cpu {

// One request of a paged batch. Its query rows [row_begin, row_begin + n_rows)
// sit at positions pos0 .. pos0 + n_rows - 1, and the K/V of its position p
// live in pool slot block_table[p / block_size] * block_size + p % block_size.
struct PagedSeq {
  int64_t row_begin = 0;
  int64_t n_rows = 0;
  int64_t pos0 = 0;
  const int32_t* block_table = nullptr;
};

// Grouped-query attention of every request of a batch over one paged KV
// layer. Query row i of a request sits at position p = pos0 + i and sees that
// request's keys j with j < pos0 + n_rows, (!causal || j <= p),
// (window == 0 || j > p - window) and (causal || window == 0 || j < p + window)
// (see ops::AttentionMask); nothing else, so
// slots past that (rejected speculative rows, other requests) never leak in.
// q, out: rows q_ld / out_ld floats apart, heads of head_dim inside a row;
// k_pool, v_pool: [slots, n_kv_heads, head_dim]. The caller guarantees that
// the block tables cover every position read (not re-checked: hot path).
void paged_attention(const float* q, int64_t q_ld, const float* k_pool, const float* v_pool, float* out,
                     int64_t out_ld, const PagedSeq* seqs, int64_t n_seqs, int64_t block_size, int64_t n_heads,
                     int64_t n_kv_heads, int64_t head_dim, float scale, bool causal, int64_t window);

}  // namespace flashdraft::ops::cpu
