// Backend::penalize on the GPU: one block per logits row, each thread owning
// whole tokens (an item of the row's sequence, or a draft new to its history),
// so every touched logit is read and written by exactly one thread with the
// same float operations as the CPU reference (ops/penalty_math.h).
#include "ops/cuda/checks.h"
#include "ops/cuda/device.h"
#include "ops/cuda/kernels.h"
#include "ops/penalty_math.h"

namespace flashdraft::ops::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kW = penalty_math::kItemWords;

__global__ void penalize_kernel(float* __restrict__ logits, int64_t ld, int64_t vocab, const int32_t* __restrict__ rows,
                                int64_t rows_ld, const int32_t* __restrict__ items, const int32_t* __restrict__ drafts) {
  const int32_t* w = rows + blockIdx.x * rows_ld;
  const float repetition = __int_as_float(w[0]), frequency = __int_as_float(w[1]), presence = __int_as_float(w[2]);
  const int32_t* it = items + static_cast<int64_t>(w[3]) * kW;
  const int32_t n_items = w[4];
  const int32_t* d = drafts + w[5];
  const int32_t n_drafts = w[6];
  float* row = logits + blockIdx.x * ld;
  auto apply = [&](int32_t token, float bias, bool seen, int32_t count) {
    if (token < 0 || token >= vocab) return;  // the caller's bug; the CPU reference throws
    row[token] = penalty_math::penalized(row[token], bias, seen, count, repetition, frequency, presence);
  };
  for (int32_t i = threadIdx.x; i < n_items + n_drafts; i += kThreads) {
    if (i < n_items) {
      const int32_t token = it[i * kW], count = it[i * kW + 1];
      int32_t extra = 0;
      for (int32_t j = 0; j < n_drafts; ++j) extra += d[j] == token;
      apply(token, __int_as_float(it[i * kW + 2]), count >= 0 || extra > 0, max(count, 0) + extra);
      continue;
    }
    const int32_t k = i - n_items, token = d[k];
    bool first = true;
    for (int32_t j = 0; j < k; ++j) first &= d[j] != token;
    if (!first) continue;
    int32_t lo = 0, hi = n_items;  // binary search: the sorted items already hold it?
    while (lo < hi) {
      const int32_t mid = (lo + hi) / 2;
      if (it[mid * kW] < token) lo = mid + 1;
      else hi = mid;
    }
    if (lo < n_items && it[lo * kW] == token) continue;
    int32_t count = 0;
    for (int32_t j = k; j < n_drafts; ++j) count += d[j] == token;
    apply(token, 0.0f, true, count);
  }
}

}  // namespace

void penalize(const Tensor& logits, const Tensor& rows, const Tensor& items, const Tensor& drafts, cudaStream_t stream) {
  expect_tensor(logits, DType::F32, "penalize", "logits");
  expect_tensor(rows, DType::I32, "penalize", "rows");
  expect_shape(rows, logits.rows, PenaltyRow::kWords, "penalize", "rows");
  if (!items.empty()) {
    expect_tensor(items, DType::I32, "penalize", "items");
    if (items.cols != kW || !items.contiguous()) fail("penalize", "items must be contiguous i32 [m, 3], is " + describe(items));
  }
  if (!drafts.empty()) {
    expect_tensor(drafts, DType::I32, "penalize", "drafts");
    if (drafts.cols != 1 || !drafts.contiguous()) fail("penalize", "drafts must be contiguous i32 [d, 1], is " + describe(drafts));
  }
  if (logits.rows == 0) return;
  if (logits.rows > 0x7fffffff) fail("penalize", "too many rows");
  penalize_kernel<<<static_cast<unsigned>(logits.rows), kThreads, 0, stream>>>(
      logits.as<float>(), logits.ld, logits.cols, rows.as<int32_t>(), rows.ld, items.as<int32_t>(),
      drafts.as<int32_t>());
  check(cudaGetLastError(), "penalize kernel launch");
}

}  // namespace flashdraft::ops::cuda
