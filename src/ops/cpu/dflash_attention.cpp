#include <cblas.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/ops.h"

namespace flashdraft::ops::cpu {

void dflash_attention(const float* q, const float* kb, const float* vb, const float* k_pool, const float* v_pool,
                      const int32_t* block_table, int64_t block_size, int64_t pos0, float* out, int64_t nb,
                      int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, float scale, bool causal, int64_t window) {
  if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
    throw Error("dflash_attention: " + std::to_string(n_heads) + " query heads cannot be grouped onto " +
                std::to_string(n_kv_heads) + " kv heads");
  if (nb <= 0) return;
  const int64_t group = n_heads / n_kv_heads;
  const int64_t q_stride = n_heads * head_dim, kv_stride = n_kv_heads * head_dim;

  // Keys in position order: context positions [lo, pos0), then the block at
  // pos0 .. pos0 + nb - 1, so key t sits at position lo + t and every query's
  // visible keys form one contiguous range. Context older than any query's
  // window is never gathered.
  const int64_t lo = window > 0 ? std::max<int64_t>(0, pos0 - window + 1) : 0;
  const int64_t n_ctx = pos0 - lo, n_keys = n_ctx + nb;
  thread_local std::vector<float> keys, values, scores;
  keys.resize(static_cast<size_t>(n_keys * kv_stride));
  values.resize(static_cast<size_t>(n_keys * kv_stride));
  scores.resize(static_cast<size_t>(nb * n_keys));
  for (int64_t c = lo; c < pos0; ++c) {
    const int64_t slot = static_cast<int64_t>(block_table[c / block_size]) * block_size + c % block_size;
    std::copy_n(k_pool + slot * kv_stride, kv_stride, keys.data() + (c - lo) * kv_stride);
    std::copy_n(v_pool + slot * kv_stride, kv_stride, values.data() + (c - lo) * kv_stride);
  }
  std::copy_n(kb, nb * kv_stride, keys.data() + n_ctx * kv_stride);
  std::copy_n(vb, nb * kv_stride, values.data() + n_ctx * kv_stride);

  for (int64_t h = 0; h < n_heads; ++h) {
    const float* kh = keys.data() + (h / group) * head_dim;
    const float* vh = values.data() + (h / group) * head_dim;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(nb), static_cast<blasint>(n_keys),
                static_cast<blasint>(head_dim), scale, q + h * head_dim, static_cast<blasint>(q_stride), kh,
                static_cast<blasint>(kv_stride), 0.0f, scores.data(), static_cast<blasint>(n_keys));
    for (int64_t i = 0; i < nb; ++i) {
      const int64_t p = pos0 + i;
      const int64_t begin = window > 0 ? std::max<int64_t>(0, p - window + 1 - lo) : 0;
      const int64_t end = causal ? n_ctx + i + 1 : n_keys;
      float* s = scores.data() + i * n_keys;
      std::fill(s, s + begin, 0.0f);
      softmax(s + begin, end - begin);  // never empty: a query always sees itself
      std::fill(s + end, s + n_keys, 0.0f);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(nb), static_cast<blasint>(head_dim),
                static_cast<blasint>(n_keys), 1.0f, scores.data(), static_cast<blasint>(n_keys), vh,
                static_cast<blasint>(kv_stride), 0.0f, out + h * head_dim, static_cast<blasint>(q_stride));
  }
}

}  // namespace flashdraft::ops::cpu
