#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/ops.h"

namespace flashdraft::ops::cpu {
namespace {

// Eight independent partial sums: without -ffast-math the compiler may not
// reorder one float accumulation, but it does vectorize these lanes.
inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t e = 0;
  for (; e + 8 <= n; e += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[e + l] * b[e + l];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; e < n; ++e) s += a[e] * b[e];
  return s;
}

inline void axpy(float* y, float a, const float* x, int64_t n) {
  for (int64_t e = 0; e < n; ++e) y[e] += a * x[e];
}

// Scores of one query row; grows only when a longer sequence shows up, so
// steady-state decoding allocates nothing.
thread_local std::vector<float> t_scores;

// One request, all heads. Built twice where the compiler can (AVX2/FMA and
// baseline x86-64, picked at load time): the build targets baseline x86-64,
// and these dot products are most of the op's time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void attend_one(const float* q, const float* k_pool, const float* v_pool, float* out, const PagedSeq& s,
                int64_t block_size, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, float scale,
                float* sc) {
  const int64_t group = n_heads / n_kv_heads;
  const int64_t q_stride = n_heads * head_dim, kv_stride = n_kv_heads * head_dim;
  // kv head outermost: the group's query heads and rows reuse the same K/V
  // rows while they are still in cache.
  for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) {
    const float* kb = k_pool + kvh * head_dim;
    const float* vb = v_pool + kvh * head_dim;
    for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
      for (int64_t i = 0; i < s.n_rows; ++i) {
        const int64_t row = s.row_begin + i;
        const float* qi = q + row * q_stride + h * head_dim;
        float* oi = out + row * q_stride + h * head_dim;
        const int64_t visible = s.pos0 + i + 1;

        float mx = -INFINITY;
        for (int64_t j0 = 0; j0 < visible; j0 += block_size) {
          const int64_t base = static_cast<int64_t>(s.block_table[j0 / block_size]) * block_size;
          const int64_t m = std::min(block_size, visible - j0);
          for (int64_t t = 0; t < m; ++t) {
            const float v = scale * dot(qi, kb + (base + t) * kv_stride, head_dim);
            sc[j0 + t] = v;
            mx = std::max(mx, v);
          }
        }
        double sum = 0.0;
        for (int64_t j = 0; j < visible; ++j) {
          sc[j] = std::exp(sc[j] - mx);
          sum += sc[j];
        }
        std::fill(oi, oi + head_dim, 0.0f);
        for (int64_t j0 = 0; j0 < visible; j0 += block_size) {
          const int64_t base = static_cast<int64_t>(s.block_table[j0 / block_size]) * block_size;
          const int64_t m = std::min(block_size, visible - j0);
          for (int64_t t = 0; t < m; ++t) axpy(oi, sc[j0 + t], vb + (base + t) * kv_stride, head_dim);
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t e = 0; e < head_dim; ++e) oi[e] *= inv;
      }
    }
  }
}

}  // namespace

void paged_attention(const float* q, const float* k_pool, const float* v_pool, float* out,
                     const PagedSeq* seqs, int64_t n_seqs, int64_t block_size, int64_t n_heads,
                     int64_t n_kv_heads, int64_t head_dim, float scale) {
  if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
    throw Error("paged_attention: " + std::to_string(n_heads) + " query heads cannot be grouped onto " +
                std::to_string(n_kv_heads) + " kv heads");
  if (block_size <= 0) throw Error("paged_attention: block size must be positive");
  for (int64_t si = 0; si < n_seqs; ++si) {
    const PagedSeq& s = seqs[si];
    if (s.n_rows <= 0) continue;
    const auto max_keys = static_cast<size_t>(s.pos0 + s.n_rows);
    if (t_scores.size() < max_keys) t_scores.resize(max_keys);
    attend_one(q, k_pool, v_pool, out, s, block_size, n_heads, n_kv_heads, head_dim, scale, t_scores.data());
  }
}

}  // namespace flashdraft::ops::cpu
