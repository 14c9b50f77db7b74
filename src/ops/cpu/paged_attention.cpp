#include <cblas.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/ops.h"

namespace flashdraft::ops::cpu {
namespace {

#define FD_ALWAYS_INLINE inline __attribute__((always_inline))

// Everything one call shares: shapes, strides and the mask.
struct Geometry {
  int64_t block_size, n_heads, n_kv_heads, head_dim, q_ld, out_ld;
  float scale;
  bool causal;
  int64_t window;
};

// HD > 0: head_dim known at compile time (64 and 128 cover Qwen3 and the
// shipped models), so loops fully unroll and accumulators stay in registers;
// HD == 0: any head_dim.

// Eight independent partial sums: without -ffast-math the compiler may not
// reorder one float accumulation, but it does vectorize these lanes.
template <int HD>
FD_ALWAYS_INLINE float dot(const float* a, const float* b, int64_t head_dim) {
  const int64_t n = HD > 0 ? HD : head_dim;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t e = 0;
  for (; e + 8 <= n; e += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[e + l] * b[e + l];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; e < n; ++e) s += a[e] * b[e];
  return s;
}

// y += sum_t p[t] * x[t * stride .. + head_dim], over m rows of one block.
template <int HD>
FD_ALWAYS_INLINE void axpy_rows(float* y, const float* p, const float* x, int64_t stride, int64_t m, int64_t head_dim) {
  if constexpr (HD > 0) {
    float acc[HD];
    for (int e = 0; e < HD; ++e) acc[e] = y[e];
    for (int64_t t = 0; t < m; ++t)
      for (int e = 0; e < HD; ++e) acc[e] += p[t] * x[t * stride + e];
    for (int e = 0; e < HD; ++e) y[e] = acc[e];
  } else {
    for (int64_t t = 0; t < m; ++t)
      for (int64_t e = 0; e < head_dim; ++e) y[e] += p[t] * x[t * stride + e];
  }
}

// e^x for x <= 0 (softmax after subtracting the max), written so the loop
// around it vectorizes: x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor
// series to r^7 (truncation error < 1e-8 relative), 2^n built in the
// exponent bits. Below -87 the result would be denormal; it is clamped there
// (e^-87 is 1e-38, nothing next to the max term's 1).
FD_ALWAYS_INLINE float exp_nonpositive(float x) {
  x = std::max(x, -87.0f);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + kRound) - kRound;
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;  // ln 2 split hi + lo
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

// x[0, n) <- softmax(x[0, n)).
FD_ALWAYS_INLINE void softmax_inplace(float* x, int64_t n) {
  // Separate simple loops with 8 partial lanes each: the shapes GCC vectorizes.
  float lane[8];
  for (int l = 0; l < 8; ++l) lane[l] = x[0];
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) lane[l] = x[j + l] > lane[l] ? x[j + l] : lane[l];
  float mx = lane[0];
  for (int l = 1; l < 8; ++l) mx = std::max(mx, lane[l]);
  for (; j < n; ++j) mx = std::max(mx, x[j]);
  for (int64_t k = 0; k < n; ++k) x[k] = exp_nonpositive(x[k] - mx);
  for (int l = 0; l < 8; ++l) lane[l] = 0.0f;
  for (j = 0; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) lane[l] += x[j + l];
  float sum = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
  for (; j < n; ++j) sum += x[j];
  const float inv = 1.0f / sum;
  for (int64_t k = 0; k < n; ++k) x[k] *= inv;
}

// Scratch (scores, gathered K/V); grows only when a longer request shows up,
// so steady-state decoding allocates nothing.
thread_local std::vector<float> t_scores, t_k, t_v;
// GEMM-path query rows per score tile: bounds the scratch for long prefill chunks.
constexpr int64_t kRowTile = 32;

// The direct path, for requests of a few rows (decoding). One request, one kv
// head: the `group` query heads that share it, all rows. Keys go block by
// block with every query of the group inside, so each K/V block is read from
// memory once and reused from L1 by all of them.
// The keys query row i of a sequence sees: positions [lo, hi).
struct KeyRange {
  int64_t lo, hi;
};
FD_ALWAYS_INLINE KeyRange visible(const PagedSeq& s, int64_t i, const Geometry& g) {
  const int64_t p = s.pos0 + i, keys = s.pos0 + s.n_rows;
  if (g.window == 0) return {0, g.causal ? p + 1 : keys};
  // A window: (p - W, p] causal, (p - W, p + W) not.
  return {std::max<int64_t>(0, p - g.window + 1), g.causal ? p + 1 : std::min(keys, p + g.window)};
}

template <int HD>
FD_ALWAYS_INLINE void attend_kv_head_impl(const float* q, const float* k_pool, const float* v_pool, float* out,
                                          const PagedSeq& s, int64_t kvh, const Geometry& geo, float* sc) {
  const int64_t head_dim = geo.head_dim, block_size = geo.block_size;
  const int64_t group = geo.n_heads / geo.n_kv_heads;
  const int64_t kv_stride = geo.n_kv_heads * head_dim;
  const int64_t keys = s.pos0 + s.n_rows;  // no row sees past the last one
  const float* kb = k_pool + kvh * head_dim;
  const float* vb = v_pool + kvh * head_dim;
  // Query a = g * n_rows + i is head kvh * group + g of row i; it sees keys visible(s, i).
  const auto q_of = [&](int64_t g, int64_t i) { return q + (s.row_begin + i) * geo.q_ld + (kvh * group + g) * head_dim; };
  const auto out_of = [&](int64_t g, int64_t i) {
    return out + (s.row_begin + i) * geo.out_ld + (kvh * group + g) * head_dim;
  };
  // Blocks wholly outside every row's window are never touched (they may hold anything).
  const int64_t first = visible(s, 0, geo).lo / block_size * block_size;

  for (int64_t j0 = first; j0 < keys; j0 += block_size) {
    const float* kblock = kb + static_cast<int64_t>(s.block_table[j0 / block_size]) * block_size * kv_stride;
    for (int64_t g = 0; g < group; ++g)
      for (int64_t i = 0; i < s.n_rows; ++i) {
        const KeyRange r = visible(s, i, geo);
        const int64_t a = std::max(r.lo, j0), b = std::min(r.hi, j0 + block_size);
        const float* qi = q_of(g, i);
        float* si = sc + (g * s.n_rows + i) * keys;
        for (int64_t t = a; t < b; ++t) si[t] = geo.scale * dot<HD>(qi, kblock + (t - j0) * kv_stride, head_dim);
      }
  }
  // Softmax over each query's visible keys, normalised before P·V.
  for (int64_t g = 0; g < group; ++g)
    for (int64_t i = 0; i < s.n_rows; ++i) {
      const KeyRange r = visible(s, i, geo);
      softmax_inplace(sc + (g * s.n_rows + i) * keys + r.lo, r.hi - r.lo);
      float* oi = out_of(g, i);
      std::fill(oi, oi + head_dim, 0.0f);
    }
  for (int64_t j0 = first; j0 < keys; j0 += block_size) {
    const float* vblock = vb + static_cast<int64_t>(s.block_table[j0 / block_size]) * block_size * kv_stride;
    for (int64_t g = 0; g < group; ++g)
      for (int64_t i = 0; i < s.n_rows; ++i) {
        const KeyRange r = visible(s, i, geo);
        const int64_t a = std::max(r.lo, j0), b = std::min(r.hi, j0 + block_size);
        if (a < b)
          axpy_rows<HD>(out_of(g, i), sc + (g * s.n_rows + i) * keys + a, vblock + (a - j0) * kv_stride, kv_stride,
                        b - a, head_dim);
      }
  }
}

// Built twice where the compiler can (AVX2/FMA and baseline x86-64, picked
// at load time): the build targets baseline x86-64, and these dot products
// are most of the op's time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void attend_kv_head(const float* q, const float* k_pool, const float* v_pool, float* out, const PagedSeq& s,
                    int64_t kvh, const Geometry& geo, float* sc) {
  switch (geo.head_dim) {
    case 64:
      return attend_kv_head_impl<64>(q, k_pool, v_pool, out, s, kvh, geo, sc);
    case 128:
      return attend_kv_head_impl<128>(q, k_pool, v_pool, out, s, kvh, geo, sc);
    default:
      return attend_kv_head_impl<0>(q, k_pool, v_pool, out, s, kvh, geo, sc);
  }
}

// Requests with at least this many rows (prefill chunks, verify blocks) take
// the GEMM path: their K/V are gathered into contiguous scratch once per kv
// head and OpenBLAS does Q·K^T and P·V, which beats the direct kernel once
// the gather is shared by several query rows. Decode rows stay direct.
constexpr int64_t kGemmRows = 4;

// These GEMMs are tiny (16 x 264 x 64 for a verify block): OpenBLAS would
// still split them over its threads, and the hand-off costs more than the
// work (21 us vs 11 us single-threaded for that shape, measured). So the
// GEMM path runs single-threaded and restores the caller's setting after,
// also on an exception. (OpenBLAS's thread count is process-wide; the
// engine drives the model from one thread.)
class SingleThreadedBlas {
 public:
  SingleThreadedBlas() : saved_(openblas_get_num_threads()) {
    if (saved_ > 1) openblas_set_num_threads(1);
  }
  ~SingleThreadedBlas() {
    if (saved_ > 1) openblas_set_num_threads(saved_);
  }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int saved_;
};

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void attend_kv_head_gemm(const float* q, const float* k_pool, const float* v_pool, float* out, const PagedSeq& s,
                         int64_t kvh, const Geometry& geo) {
  const int64_t head_dim = geo.head_dim, block_size = geo.block_size;
  const int64_t group = geo.n_heads / geo.n_kv_heads;
  const int64_t kv_stride = geo.n_kv_heads * head_dim;
  // Gathered keys are positions [lo, keys): from the first row's window start
  // (0 without a window) to the last row. Every position there belongs to the
  // sequence, so the zeroed scores outside a row's range multiply real values.
  const int64_t lo = visible(s, 0, geo).lo, keys = s.pos0 + s.n_rows, n_keys = keys - lo;
  const auto need_kv = static_cast<size_t>(n_keys * head_dim);
  if (t_k.size() < need_kv) t_k.resize(need_kv);
  if (t_v.size() < need_kv) t_v.resize(need_kv);
  for (int64_t p = lo; p < keys; ++p) {
    const int64_t slot = static_cast<int64_t>(s.block_table[p / block_size]) * block_size + p % block_size;
    std::copy_n(k_pool + slot * kv_stride + kvh * head_dim, head_dim, t_k.data() + (p - lo) * head_dim);
    std::copy_n(v_pool + slot * kv_stride + kvh * head_dim, head_dim, t_v.data() + (p - lo) * head_dim);
  }
  const auto need_s = static_cast<size_t>(std::min(kRowTile, s.n_rows) * n_keys);
  if (t_scores.size() < need_s) t_scores.resize(need_s);
  float* sc = t_scores.data();
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
    for (int64_t r0 = 0; r0 < s.n_rows; r0 += kRowTile) {
      const int64_t rows = std::min(kRowTile, s.n_rows - r0);
      // Keys this tile's rows can see at most: the last row's range ends furthest out.
      const int64_t tile_keys = visible(s, r0 + rows - 1, geo).hi - lo;
      const float* qh = q + (s.row_begin + r0) * geo.q_ld + h * head_dim;
      float* oh = out + (s.row_begin + r0) * geo.out_ld + h * head_dim;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows), static_cast<blasint>(tile_keys),
                  static_cast<blasint>(head_dim), geo.scale, qh, static_cast<blasint>(geo.q_ld), t_k.data(),
                  static_cast<blasint>(head_dim), 0.0f, sc, static_cast<blasint>(tile_keys));
      for (int64_t r = 0; r < rows; ++r) {
        float* sr = sc + r * tile_keys;
        const KeyRange v = visible(s, r0 + r, geo);
        std::fill(sr, sr + (v.lo - lo), 0.0f);
        softmax_inplace(sr + (v.lo - lo), v.hi - v.lo);
        std::fill(sr + (v.hi - lo), sr + tile_keys, 0.0f);
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(rows), static_cast<blasint>(head_dim),
                  static_cast<blasint>(tile_keys), 1.0f, sc, static_cast<blasint>(tile_keys), t_v.data(),
                  static_cast<blasint>(head_dim), 0.0f, oh, static_cast<blasint>(geo.out_ld));
    }
}

}  // namespace

void paged_attention(const float* q, int64_t q_ld, const float* k_pool, const float* v_pool, float* out,
                     int64_t out_ld, const PagedSeq* seqs, int64_t n_seqs, int64_t block_size, int64_t n_heads,
                     int64_t n_kv_heads, int64_t head_dim, float scale, bool causal, int64_t window) {
  if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
    throw Error("paged_attention: " + std::to_string(n_heads) + " query heads cannot be grouped onto " +
                std::to_string(n_kv_heads) + " kv heads");
  if (block_size <= 0) throw Error("paged_attention: block size must be positive");
  if (window < 0) throw Error("paged_attention: window must be >= 0, got " + std::to_string(window));
  const Geometry geo{block_size, n_heads, n_kv_heads, head_dim, q_ld, out_ld, scale, causal, window};
  const int64_t group = n_heads / n_kv_heads;
  std::optional<SingleThreadedBlas> single;
  for (int64_t si = 0; si < n_seqs; ++si) {
    const PagedSeq& s = seqs[si];
    if (s.n_rows <= 0) continue;
    if (s.n_rows >= kGemmRows) {
      if (!single) single.emplace();
      for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) attend_kv_head_gemm(q, k_pool, v_pool, out, s, kvh, geo);
      continue;
    }
    const auto need = static_cast<size_t>(group * s.n_rows * (s.pos0 + s.n_rows));
    if (t_scores.size() < need) t_scores.resize(need);
    for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) attend_kv_head(q, k_pool, v_pool, out, s, kvh, geo, t_scores.data());
  }
}

}  // namespace flashdraft::ops::cpu
