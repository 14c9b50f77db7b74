#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <string>

#include "core/error.h"

namespace flashdraft::engine {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Rejects rows that would poison the softmax (-inf, a masked token, is fine)
// and returns the largest logit. Written as one branch-free pass so it
// vectorises: it runs on every ~150k-entry row.
float checked_max(std::span<const float> logits) {
  if (logits.empty()) throw Error("sampler: empty logits row (expected one value per vocabulary entry)");
  float max = -kInf;
  bool nan = false;
  for (float v : logits) {
    nan |= (v != v);
    max = v > max ? v : max;
  }
  if (nan || max == kInf) {
    for (size_t i = 0; i < logits.size(); ++i) {
      if (std::isnan(logits[i]) || logits[i] == kInf) {
        throw Error("sampler: logit of token " + std::to_string(i) + " is " + std::to_string(logits[i]) +
                    " (expected a finite number or -inf)");
      }
    }
  }
  if (max == -kInf) throw Error("sampler: every logit is -inf; no token can be sampled");
  return max;
}

int32_t first_index_of(std::span<const float> values, float v) {
  return static_cast<int32_t>(std::find(values.begin(), values.end(), v) - values.begin());
}

// Ids (ascending) whose logit is >= the k-th largest, so ties at the boundary
// all survive. Small k, the usual case, keeps a k-entry min-heap instead of
// partitioning the whole row.
std::vector<int32_t> top_k_ids(std::span<const float> logits, int top_k) {
  float threshold;
  if (top_k <= 1024) {
    std::priority_queue<float, std::vector<float>, std::greater<>> smallest_on_top;
    for (float v : logits) {
      if (smallest_on_top.size() < static_cast<size_t>(top_k)) {
        smallest_on_top.push(v);
      } else if (v > smallest_on_top.top()) {
        smallest_on_top.pop();
        smallest_on_top.push(v);
      }
    }
    threshold = smallest_on_top.top();
  } else {
    std::vector<float> values(logits.begin(), logits.end());
    std::nth_element(values.begin(), values.begin() + (top_k - 1), values.end(), std::greater<>());
    threshold = values[top_k - 1];
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] >= threshold && logits[i] > -kInf) ids.push_back(static_cast<int32_t>(i));
  }
  return ids;
}

void renormalise(std::vector<double>& p) {
  const double sum = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& q : p) q /= sum;
}

// Keeps entries (ids ascending, p aligned) satisfying keep(j).
template <typename Keep>
void filter(std::vector<int32_t>& ids, std::vector<double>& p, Keep keep) {
  size_t out = 0;
  for (size_t j = 0; j < ids.size(); ++j) {
    if (keep(j)) {
      ids[out] = ids[j];
      p[out] = p[j];
      ++out;
    }
  }
  ids.resize(out);
  p.resize(out);
}

// Keeps the most probable entries while the mass before each is < top_p. The
// nucleus is usually tiny next to the vocabulary, so sort only a prefix and
// widen it until the mass is reached.
void apply_top_p(double top_p, std::vector<int32_t>& ids, std::vector<double>& p) {
  if (top_p >= 1.0) return;
  std::vector<uint32_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0u);
  auto more_probable = [&](uint32_t a, uint32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); };
  std::vector<char> keep(ids.size(), 0);
  size_t sorted = std::min<size_t>(order.size(), 64);
  for (;;) {
    std::partial_sort(order.begin(), order.begin() + sorted, order.end(), more_probable);
    double before = 0;
    size_t cut = 0;
    while (cut < sorted && before < top_p) before += p[order[cut++]];
    if (before >= top_p || sorted == order.size()) {
      for (size_t j = 0; j < cut; ++j) keep[order[j]] = 1;
      break;
    }
    sorted = std::min(order.size(), sorted * 4);
  }
  filter(ids, p, [&](size_t j) { return keep[j] != 0; });
  renormalise(p);
}

void apply_min_p(double min_p, std::vector<int32_t>& ids, std::vector<double>& p) {
  if (min_p <= 0.0) return;
  const double threshold = min_p * *std::max_element(p.begin(), p.end());
  filter(ids, p, [&](size_t j) { return p[j] >= threshold; });
  renormalise(p);
}

}  // namespace

void validate(const SamplingParams& params) {
  auto fail = [](const std::string& what) { throw Error("sampling parameter " + what); };
  if (!(params.temperature >= 0) || !std::isfinite(params.temperature)) {
    fail("temperature: expected a finite number >= 0, found " + std::to_string(params.temperature));
  }
  if (params.top_k < 0) fail("top_k: expected >= 0 (0 = off), found " + std::to_string(params.top_k));
  if (!(params.top_p > 0 && params.top_p <= 1)) {
    fail("top_p: expected 0 < top_p <= 1, found " + std::to_string(params.top_p));
  }
  if (!(params.min_p >= 0 && params.min_p <= 1)) {
    fail("min_p: expected 0 <= min_p <= 1, found " + std::to_string(params.min_p));
  }
}

int32_t argmax(std::span<const float> values) {
  float max = -kInf;
  for (float v : values) max = v > max ? v : max;
  const int32_t at = first_index_of(values, max);
  // All -inf or NaN rows: index 0, as a plain scan would give.
  return at < static_cast<int32_t>(values.size()) ? at : 0;
}

Sampler::Sampler(const SamplingParams& params)
    : params_(params), rng_(params.seed ? *params.seed : std::random_device{}()) {
  validate(params_);
}

void Sampler::distribution(std::span<const float> logits, Distribution& d) const {
  const float max = checked_max(logits);
  d.ids.clear();
  d.probs.clear();
  if (params_.temperature == 0.0) {
    d.ids.push_back(first_index_of(logits, max));
    d.probs.push_back(1.0f);
    return;
  }
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < logits.size()) {
    d.ids = top_k_ids(logits, params_.top_k);
  } else {
    for (size_t i = 0; i < logits.size(); ++i) {
      if (logits[i] > -kInf) d.ids.push_back(static_cast<int32_t>(i));
    }
  }
  // Softmax of logits / temperature; the row maximum always survives top-k.
  const double inv_t = 1.0 / params_.temperature;
  const double max_z = static_cast<double>(max) * inv_t;
  std::vector<double>& p = d.work;
  p.resize(d.ids.size());
  for (size_t j = 0; j < d.ids.size(); ++j) p[j] = std::exp(static_cast<double>(logits[d.ids[j]]) * inv_t - max_z);
  renormalise(p);

  apply_top_p(params_.top_p, d.ids, p);
  apply_min_p(params_.min_p, d.ids, p);
  d.probs.assign(p.begin(), p.end());
}

std::vector<float> Sampler::probs(std::span<const float> logits) const {
  Distribution d;
  distribution(logits, d);
  std::vector<float> out(logits.size(), 0.0f);
  for (size_t j = 0; j < d.ids.size(); ++j) out[d.ids[j]] = d.probs[j];
  return out;
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (params_.temperature == 0.0) {
    return first_index_of(logits, checked_max(logits));
  }
  // Same walk as sample_from_probs(probs(logits)), minus the zero entries, so
  // the two give the same token from the same generator state.
  distribution(logits, scratch_);
  return draw(scratch_.ids, scratch_.probs);
}

double Sampler::uniform() {
  // The top 53 bits make every double in [0, 1) on a 2^-53 grid equally likely.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample_from_probs(std::span<const float> weights) {
  for (size_t i = 0; i < weights.size(); ++i) {
    const float w = weights[i];
    if (!(w >= 0) || !std::isfinite(w)) {
      throw Error("sampler: weight of token " + std::to_string(i) + " is " + std::to_string(w) +
                  " (expected a finite number >= 0)");
    }
  }
  std::vector<int32_t> ids;
  std::vector<float> positive;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] > 0) {
      ids.push_back(static_cast<int32_t>(i));
      positive.push_back(weights[i]);
    }
  }
  if (ids.empty()) throw Error("sampler: every weight is zero; nothing to sample");
  return draw(ids, positive);
}

int32_t Sampler::draw(const std::vector<int32_t>& ids, const std::vector<float>& weights) {
  double total = 0;
  for (float w : weights) total += w;
  const double target = uniform() * total;
  double cumulative = 0;
  for (size_t j = 0; j < ids.size(); ++j) {
    cumulative += weights[j];
    if (target < cumulative) return ids[j];
  }
  // Rounding left the running sum a hair below the total.
  return ids.back();
}

}  // namespace flashdraft::engine
