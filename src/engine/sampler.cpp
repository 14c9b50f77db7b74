#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace flashdraft::engine {

namespace {

// Rejects rows that would poison the softmax; -inf (a masked token) is fine.
void check_logits(std::span<const float> logits) {
  if (logits.empty()) throw Error("sampler: empty logits row (expected one value per vocabulary entry)");
  bool any_finite = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
      throw Error("sampler: logit of token " + std::to_string(i) + " is " + std::to_string(v) +
                  " (expected a finite number or -inf)");
    }
    any_finite = any_finite || std::isfinite(v);
  }
  if (!any_finite) throw Error("sampler: every logit is -inf; no token can be sampled");
}

void renormalise(std::vector<double>& p, const std::vector<int32_t>& kept) {
  double sum = 0;
  for (int32_t i : kept) sum += p[i];
  for (int32_t i : kept) p[i] /= sum;
}

// Tokens whose logit is at least the k-th largest survive.
void apply_top_k(int top_k, const std::vector<double>& z, std::vector<int32_t>& kept) {
  if (top_k <= 0 || static_cast<size_t>(top_k) >= kept.size()) return;
  std::vector<double> values;
  values.reserve(kept.size());
  for (int32_t i : kept) values.push_back(z[i]);
  std::nth_element(values.begin(), values.begin() + (top_k - 1), values.end(), std::greater<>());
  const double threshold = values[top_k - 1];
  std::erase_if(kept, [&](int32_t i) { return z[i] < threshold; });
}

// Keeps the most probable tokens while the mass before each is < top_p. The
// nucleus is usually tiny next to the vocabulary, so sort only a prefix and
// widen it until the mass is reached.
void apply_top_p(double top_p, std::vector<double>& p, std::vector<int32_t>& kept) {
  if (top_p >= 1.0) return;
  auto more_probable = [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); };
  size_t sorted = std::min<size_t>(kept.size(), 64);
  for (;;) {
    std::partial_sort(kept.begin(), kept.begin() + sorted, kept.end(), more_probable);
    double before = 0;
    size_t cut = 0;
    while (cut < sorted && before < top_p) before += p[kept[cut++]];
    if (before >= top_p || sorted == kept.size()) {
      for (size_t j = cut; j < kept.size(); ++j) p[kept[j]] = 0;
      kept.resize(cut);
      break;
    }
    sorted = std::min(kept.size(), sorted * 4);
  }
  renormalise(p, kept);
}

void apply_min_p(double min_p, std::vector<double>& p, std::vector<int32_t>& kept) {
  if (min_p <= 0.0) return;
  double top = 0;
  for (int32_t i : kept) top = std::max(top, p[i]);
  const double threshold = min_p * top;
  std::erase_if(kept, [&](int32_t i) {
    if (p[i] >= threshold) return false;
    p[i] = 0;
    return true;
  });
  renormalise(p, kept);
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
  int32_t best = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] > values[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

Sampler::Sampler(const SamplingParams& params)
    : params_(params), rng_(params.seed ? *params.seed : std::random_device{}()) {
  validate(params_);
}

std::vector<float> Sampler::probs(std::span<const float> logits) const {
  check_logits(logits);
  std::vector<float> out(logits.size(), 0.0f);
  if (params_.temperature == 0.0) {
    out[argmax(logits)] = 1.0f;
    return out;
  }
  const double inv_t = 1.0 / params_.temperature;
  std::vector<double> z(logits.size());
  std::vector<int32_t> kept;
  kept.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    z[i] = static_cast<double>(logits[i]) * inv_t;
    if (std::isfinite(z[i])) kept.push_back(static_cast<int32_t>(i));
  }
  apply_top_k(params_.top_k, z, kept);

  double max_z = -std::numeric_limits<double>::infinity();
  for (int32_t i : kept) max_z = std::max(max_z, z[i]);
  std::vector<double> p(logits.size(), 0.0);
  for (int32_t i : kept) p[i] = std::exp(z[i] - max_z);
  renormalise(p, kept);

  apply_top_p(params_.top_p, p, kept);
  apply_min_p(params_.min_p, p, kept);
  for (int32_t i : kept) out[i] = static_cast<float>(p[i]);
  return out;
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (params_.temperature == 0.0) {
    check_logits(logits);
    return argmax(logits);
  }
  return sample_from_probs(probs(logits));
}

double Sampler::uniform() {
  // The top 53 bits make every double in [0, 1) on a 2^-53 grid equally likely.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample_from_probs(std::span<const float> weights) {
  double total = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const float w = weights[i];
    if (!(w >= 0) || !std::isfinite(w)) {
      throw Error("sampler: weight of token " + std::to_string(i) + " is " + std::to_string(w) +
                  " (expected a finite number >= 0)");
    }
    total += w;
  }
  if (!(total > 0)) throw Error("sampler: every weight is zero; nothing to sample");
  const double target = uniform() * total;
  double cumulative = 0;
  int32_t last_positive = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    cumulative += weights[i];
    last_positive = static_cast<int32_t>(i);
    if (target < cumulative) return last_positive;
  }
  // Rounding left the running sum a hair below the total.
  return last_positive;
}

}  // namespace flashdraft::engine
