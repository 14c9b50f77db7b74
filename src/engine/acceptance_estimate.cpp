#include "engine/acceptance_estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace flashdraft::engine {

AcceptanceEstimate::AcceptanceEstimate(int64_t max_drafts) : max_k_(std::max<int64_t>(max_drafts, 0)) {
  const auto k = static_cast<size_t>(max_k_);
  global_.tried.assign(k, 0.0);
  global_.kept.assign(k, 0.0);
  update_global_rates();
}

void AcceptanceEstimate::update_global_rates() {
  global_rates_.resize(global_.tried.size());
  probe_rates_.resize(global_.tried.size());
  double prior = kPrior;
  for (size_t i = 0; i < global_rates_.size(); ++i) {
    const double n = global_.tried[i] + kPriorWeight;
    const double g = prior = global_rates_[i] = (global_.kept[i] + kPriorWeight * prior) / n;
    probe_rates_[i] = std::min(kPrior, g + kProbeZ * std::sqrt(g * (1 - g) / n));
  }
}

double AcceptanceEstimate::probe_rate(int64_t m) const { return probe_rates_[static_cast<size_t>(m - 1)]; }

double AcceptanceEstimate::global_rate(int64_t m) const { return global_rates_[static_cast<size_t>(m - 1)]; }

double AcceptanceEstimate::rate(const Counts* r, size_t i) const {
  const double g = global_rate(static_cast<int64_t>(i) + 1);
  if (!r) return g;
  const double q = (r->kept[i] + kPriorWeight * g) / (r->tried[i] + kPriorWeight);
  return r->idle >= r->wait ? std::max(q, probe_rates_[i]) : q;
}

const AcceptanceEstimate::Counts* AcceptanceEstimate::find(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

double AcceptanceEstimate::request_rate(RequestId id, int64_t m) const {
  return rate(find(id), static_cast<size_t>(m - 1));
}

void AcceptanceEstimate::cumulative(RequestId id, std::span<double> out) const {
  const Counts* r = find(id);  // once: every step asks for every request
  double p = 1.0;
  const size_t n = std::min(out.size(), static_cast<size_t>(max_k_));
  for (size_t j = 0; j < n; ++j) {
    p *= rate(r, j);
    out[j] = p;
  }
  for (size_t j = n; j < out.size(); ++j) out[j] = 0.0;
}

AcceptanceEstimate::Counts& AcceptanceEstimate::request(RequestId id) {
  auto [it, fresh] = requests_.try_emplace(id);
  if (fresh) {
    it->second.tried.assign(static_cast<size_t>(max_k_), 0.0);
    it->second.kept.assign(static_cast<size_t>(max_k_), 0.0);
  }
  return it->second;
}

void AcceptanceEstimate::observe(RequestId id, int64_t proposed, int64_t accepted) {
  if (proposed < 1 || proposed > max_k_ || accepted < 0 || accepted > proposed) {
    throw Error(fmt::format("acceptance estimate: {} of {} drafts accepted (at most {} drafts)", accepted, proposed,
                            max_k_));
  }
  Counts& r = request(id);
  r.wait = r.idle >= r.wait ? std::min(2 * r.wait, kProbeMax) : kProbeAfter;
  r.idle = 0;
  for (size_t i = 0; i < r.tried.size(); ++i) {
    r.tried[i] *= kRequestDecay;
    r.kept[i] *= kRequestDecay;
  }
  const auto tried = static_cast<size_t>(std::min(accepted + 1, proposed));
  for (size_t i = 0; i < tried; ++i) {
    const double kept = static_cast<int64_t>(i) < accepted ? 1.0 : 0.0;
    r.tried[i] += 1;
    r.kept[i] += kept;
    global_.tried[i] = global_.tried[i] * kGlobalDecay + 1;
    global_.kept[i] = global_.kept[i] * kGlobalDecay + kept;
  }
  update_global_rates();
}

void AcceptanceEstimate::idle(RequestId id) {
  Counts& r = request(id);
  ++r.idle;
  for (size_t i = 0; i < r.tried.size(); ++i) {
    r.tried[i] *= kIdleDecay;
    r.kept[i] *= kIdleDecay;
  }
}

void AcceptanceEstimate::forget(RequestId id) { requests_.erase(id); }

}  // namespace flashdraft::engine
