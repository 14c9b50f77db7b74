#include <cblas.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/ops.h"

namespace flashdraft::ops::cpu {
namespace {

// Query rows per block: bounds the score buffer to kBlock x nkv floats.
constexpr int64_t kBlock = 128;

}  // namespace

void attention(const float* q, const float* k, const float* v, float* out, int64_t nq, int64_t nkv,
               int64_t q_pos0, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, float scale,
               bool causal) {
  if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
    throw Error("attention: " + std::to_string(n_heads) + " query heads cannot be grouped onto " +
                std::to_string(n_kv_heads) + " kv heads");
  if (nq <= 0) return;
  const int64_t group = n_heads / n_kv_heads;
  const int64_t q_stride = n_heads * head_dim;
  const int64_t kv_stride = n_kv_heads * head_dim;
  std::vector<float> scores(static_cast<size_t>(std::min(nq, kBlock) * std::max<int64_t>(nkv, 1)));

  for (int64_t h = 0; h < n_heads; ++h) {
    const float* kh = k + (h / group) * head_dim;
    const float* vh = v + (h / group) * head_dim;
    for (int64_t r0 = 0; r0 < nq; r0 += kBlock) {
      const int64_t rows = std::min(kBlock, nq - r0);
      // Keys past the last visible one are never needed by this block.
      const int64_t keys = causal ? std::clamp<int64_t>(q_pos0 + r0 + rows, 0, nkv) : nkv;
      float* oh = out + r0 * q_stride + h * head_dim;
      if (keys == 0) {
        for (int64_t r = 0; r < rows; ++r) std::fill(oh + r * q_stride, oh + r * q_stride + head_dim, 0.0f);
        continue;
      }
      // S[rows, keys] = scale * Q_h · K_h^T, straight from the strided layouts.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows),
                  static_cast<blasint>(keys), static_cast<blasint>(head_dim), scale,
                  q + r0 * q_stride + h * head_dim, static_cast<blasint>(q_stride), kh,
                  static_cast<blasint>(kv_stride), 0.0f, scores.data(), static_cast<blasint>(keys));
      for (int64_t r = 0; r < rows; ++r) {
        float* s = scores.data() + r * keys;
        const int64_t visible = causal ? std::clamp<int64_t>(q_pos0 + r0 + r + 1, 0, keys) : keys;
        if (visible > 0) softmax(s, visible);
        std::fill(s + visible, s + keys, 0.0f);
      }
      // O_h[rows, head_dim] = P · V_h (a row with no visible key comes out zero).
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(rows),
                  static_cast<blasint>(head_dim), static_cast<blasint>(keys), 1.0f, scores.data(),
                  static_cast<blasint>(keys), vh, static_cast<blasint>(kv_stride), 0.0f, oh,
                  static_cast<blasint>(q_stride));
    }
  }
}

}  // namespace flashdraft::ops::cpu
