// Compiled with -ffp-contract=off (see ops/sample_math.h): the weights must
// be the device's bit for bit.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <vector>

#include "ops/cpu/sampling.h"
#include "ops/sample_math.h"

namespace flashdraft::ops::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The k-th largest logit (counting repeats). Small k, the usual case, keeps a
// k-entry min-heap instead of partitioning a copy of the whole row.
float kth_largest(const float* logits, int64_t vocab, int64_t k) {
  if (k <= 1024) {
    std::priority_queue<float, std::vector<float>, std::greater<>> smallest_on_top;
    for (int64_t j = 0; j < vocab; ++j) {
      const float v = logits[j];
      if (static_cast<int64_t>(smallest_on_top.size()) < k) {
        smallest_on_top.push(v);
      } else if (v > smallest_on_top.top()) {
        smallest_on_top.pop();
        smallest_on_top.push(v);
      }
    }
    return smallest_on_top.top();
  }
  std::vector<float> values(logits, logits + vocab);
  std::nth_element(values.begin(), values.begin() + (k - 1), values.end(), std::greater<>());
  return values[static_cast<size_t>(k - 1)];
}

// The weight of the token at which the running sum of the positive weights,
// heaviest first, reaches `target`. The nucleus is usually tiny next to the
// vocabulary, so only a prefix is sorted, widened until the sum gets there.
float top_p_threshold(const float* weights, int64_t vocab, double target) {
  std::vector<int32_t> order;
  for (int64_t j = 0; j < vocab; ++j)
    if (weights[j] > 0) order.push_back(static_cast<int32_t>(j));
  auto heavier = [&](int32_t a, int32_t b) { return weights[a] > weights[b] || (weights[a] == weights[b] && a < b); };
  size_t sorted = std::min<size_t>(order.size(), 64);
  for (;;) {
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(sorted), order.end(), heavier);
    double sum = 0;
    for (size_t c = 0; c < sorted; ++c) {
      sum += weights[order[c]];
      if (sum >= target) return weights[order[c]];
    }
    // Rounding can leave the whole sum a hair below a target near the total: keep everything.
    if (sorted == order.size()) return weights[order.back()];
    sorted = std::min(order.size(), sorted * 4);
  }
}

}  // namespace

bool sample_weights(const float* logits, int64_t vocab, const SampleRow& params, float* weights) {
  if (vocab <= 0) return false;
  float max = -kInf;
  int64_t argmax = 0;
  bool bad = false;
  for (int64_t j = 0; j < vocab; ++j) {
    const float v = logits[j];
    bad |= std::isnan(v) || v == kInf;
    if (v > max) {
      max = v;
      argmax = j;
    }
  }
  if (bad || max == -kInf) return false;
  std::fill(weights, weights + vocab, 0.0f);
  if (!(params.temperature > 0)) {
    weights[argmax] = 1.0f;
    return true;
  }

  const bool top_k = params.top_k > 0 && params.top_k < vocab;
  const float kth = top_k ? kth_largest(logits, vocab, params.top_k) : -kInf;
  const float inv_t = sample_math::reciprocal(params.temperature);
  double total = 0;
  for (int64_t j = 0; j < vocab; ++j) {
    if (logits[j] < kth) continue;
    weights[j] = sample_math::weight(logits[j], max, inv_t);
    total += weights[j];
  }

  float threshold = 0.0f;
  if (params.top_p < 1.0f) threshold = top_p_threshold(weights, vocab, static_cast<double>(params.top_p) * total);
  if (params.min_p > threshold) threshold = params.min_p;
  if (threshold > 0)
    for (int64_t j = 0; j < vocab; ++j)
      if (weights[j] < threshold) weights[j] = 0.0f;
  return true;
}

int32_t draw(const float* weights, int64_t vocab, double u) {
  double total = 0;
  int64_t last = -1;
  for (int64_t j = 0; j < vocab; ++j) {
    if (weights[j] > 0) {
      total += weights[j];
      last = j;
    }
  }
  if (last < 0) return -1;
  const double target = u * total;
  double sum = 0;
  for (int64_t j = 0; j < vocab; ++j) {
    if (weights[j] <= 0) continue;
    sum += weights[j];
    if (target < sum) return static_cast<int32_t>(j);
  }
  return static_cast<int32_t>(last);
}

int32_t sample_row(const float* logits, int64_t vocab, const SampleRow& params, float* scratch) {
  if (!sample_weights(logits, vocab, params, scratch)) return -1;
  const uint64_t seed = uint64_t{params.seed_hi} << 32 | params.seed_lo;
  return draw(scratch, vocab, sample_math::uniform(seed, static_cast<uint32_t>(params.position), 0));
}

int32_t accepted_prefix(const int32_t* tokens, const SampleRow* rows, int64_t n_rows) {
  int32_t a = 0;
  while (a + 1 < n_rows && tokens[a] == rows[a].draft) ++a;
  return a;
}

}  // namespace flashdraft::ops::cpu
