#include "engine/step_cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace flashdraft::engine {
namespace {

// Weight of the past per new step: about the last 200 steps count.
constexpr double kDecay = 0.995;
// Once fitted to this many steps, a measurement off by more than this factor
// is taken for an accident rather than the machine, unless it keeps happening.
constexpr int64_t kTrustAfter = 20;
constexpr double kOutlier = 3.0;
constexpr int kOutliersBelieved = 3;

constexpr double kKeysUnit = 1024.0;
constexpr std::array<double, 3> kHinges = {16, 64, 256};

// Solves the symmetric positive (semi)definite system m x = v (n x n, row
// major) in place by Gaussian elimination with partial pivoting; false when
// singular.
bool solve(double* m, double* v, int n) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(m[r * n + c]) > std::abs(m[p * n + c])) p = r;
    if (std::abs(m[p * n + c]) < 1e-300) return false;
    if (p != c) {
      for (int k = 0; k < n; ++k) std::swap(m[c * n + k], m[p * n + k]);
      std::swap(v[c], v[p]);
    }
    for (int r = c + 1; r < n; ++r) {
      const double f = m[r * n + c] / m[c * n + c];
      if (f == 0) continue;
      for (int k = c; k < n; ++k) m[r * n + k] -= f * m[c * n + k];
      v[r] -= f * v[c];
    }
  }
  for (int c = n - 1; c >= 0; --c) {
    double s = v[c];
    for (int k = c + 1; k < n; ++k) s -= m[c * n + k] * v[k];
    v[c] = s / m[c * n + c];
  }
  return true;
}

}  // namespace

void StepShape::add_decode(int64_t context, int64_t rows, int64_t draft_block) {
  const auto c = static_cast<double>(context), n = static_cast<double>(rows);
  const auto b = static_cast<double>(std::max(rows, draft_block));
  seqs += 1;
  this->rows += n;
  logit_rows += n;
  seq_keys += c + n;
  row_keys += n * c + n * (n + 1) / 2;  // causal within the verify rows
  if (rows > 1) {
    draft_seqs += 1;
    draft_rows += b;
    draft_keys += b * (c + b);  // the block attends to all of itself
    draft_logit_rows += n - 1;
  }
}

void StepShape::add_decodes(double n_seqs, int64_t rows, double context_sum, double block_sum,
                            double block_keys_sum) {
  const auto n = static_cast<double>(rows);
  seqs += n_seqs;
  this->rows += n_seqs * n;
  logit_rows += n_seqs * n;
  seq_keys += context_sum + n_seqs * n;
  row_keys += n * context_sum + n_seqs * (n * (n + 1) / 2);
  if (rows > 1) {
    draft_seqs += n_seqs;
    draft_rows += block_sum;
    draft_keys += block_keys_sum;
    draft_logit_rows += n_seqs * (n - 1);
  }
}

void StepShape::add_prefill(int64_t context, int64_t rows) {
  const auto c = static_cast<double>(context), n = static_cast<double>(rows);
  seqs += 1;
  this->rows += n;
  logit_rows += 1;
  seq_keys += c + n;
  row_keys += n * c + n * (n + 1) / 2;
}

const std::array<const char*, StepCostModel::kFeatures>& StepCostModel::names() {
  static const std::array<const char*, kFeatures> n = {
      "step", "row", "row>16", "row>64", "row>256", "logit_row", "seq", "seq_kkey", "row_kkey",
      "draft", "draft_row", "draft_row_kkey", "uneven", "draft_logit_row"};
  return n;
}

StepCostModel::StepCostModel() = default;

StepCostModel::StepCostModel(const Coefficients& coefficients, bool learn) : coef_(coefficients), learn_(learn) {}

std::array<double, StepCostModel::kFeatures> StepCostModel::features(const StepShape& s) {
  const bool drafting = s.draft_seqs > 0;
  return {1.0,
          s.rows,
          std::max(0.0, s.rows - kHinges[0]),
          std::max(0.0, s.rows - kHinges[1]),
          std::max(0.0, s.rows - kHinges[2]),
          s.logit_rows,
          s.seqs,
          s.seq_keys / kKeysUnit,
          s.row_keys / kKeysUnit,
          drafting ? 1.0 : 0.0,
          s.draft_rows,
          s.draft_keys / kKeysUnit,
          s.uneven ? 1.0 : 0.0,
          s.draft_logit_rows};
}

double StepCostModel::predict(const StepShape& shape) const {
  const auto x = features(shape);
  double t = 0;
  for (int i = 0; i < kFeatures; ++i) t += coef_[i] * x[i];
  return t;
}

void StepCostModel::observe(const StepShape& shape, double seconds, double weight, bool refit_now) {
  if (!learn_ || !(seconds > 0) || !std::isfinite(seconds)) return;
  if (observations_ >= kTrustAfter) {
    const double predicted = predict(shape);
    if (predicted > 0 && (seconds > kOutlier * predicted || seconds * kOutlier < predicted)) {
      if (++outliers_in_a_row_ < kOutliersBelieved) return;
    } else {
      outliers_in_a_row_ = 0;
    }
  }
  const auto x = features(shape);
  for (double& v : xtx_) v *= kDecay;
  for (double& v : xty_) v *= kDecay;
  for (int i = 0; i < kFeatures; ++i) {
    xty_[i] += weight * x[i] * seconds;
    for (int j = 0; j < kFeatures; ++j) xtx_[i * kFeatures + j] += weight * x[i] * x[j];
  }
  ++observations_;
  // The first steps each sharpen the fit a lot; later ones a little.
  if (observations_ < 64 || ++since_fit_ >= 8) refit_due_ = true;
  if (refit_now) refit_if_due();
}

void StepCostModel::refit_if_due() {
  if (refit_due_) refit();
}

void StepCostModel::refit() {
  since_fit_ = 0;
  refit_due_ = false;
  const auto x = nnls_normal(xtx_, xty_, kFeatures, coef_);
  for (int i = 0; i < kFeatures; ++i) coef_[i] = x[i];
}

std::string StepCostModel::describe() const {
  std::string s;
  for (int i = 0; i < kFeatures; ++i) {
    if (coef_[i] <= 0) continue;
    if (!s.empty()) s += ", ";
    s += fmt::format("{} {:.4g} ms", names()[i], coef_[i] * 1e3);
  }
  return s.empty() ? "no data" : s;
}

std::vector<double> nnls_normal(std::span<const double> ata_in, std::span<const double> atb, int n,
                                std::span<const double> start) {
  // A relative ridge (Levenberg-Marquardt style, scale-free) so that a term
  // the data cannot tell apart from another gets no weight rather than an
  // arbitrary one. It also makes the problem strictly convex: one minimiser,
  // whichever start the search takes.
  std::vector<double> ata(ata_in.begin(), ata_in.end());
  for (int i = 0; i < n; ++i) ata[i * n + i] += 1e-6 * ata[i * n + i] + 1e-30;

  std::vector<double> x(n, 0.0);
  std::vector<bool> passive(n, false);
  auto gradient = [&](int j) {
    double g = atb[j];
    for (int k = 0; k < n; ++k) g -= ata[j * n + k] * x[k];
    return g;
  };
  // Unconstrained minimiser over the passive set (others 0), its scratch
  // allocated once per fit rather than once per solve.
  std::vector<int> idx(n);
  std::vector<double> a(static_cast<size_t>(n) * n), b(n), z(n);
  auto solve_passive = [&] {
    int m = 0;
    for (int i = 0; i < n; ++i)
      if (passive[i]) idx[m++] = i;
    for (int r = 0; r < m; ++r) {
      b[r] = atb[idx[r]];
      for (int c = 0; c < m; ++c) a[r * m + c] = ata[idx[r] * n + idx[c]];
    }
    std::fill(z.begin(), z.end(), 0.0);
    if (!solve(a.data(), b.data(), m)) return false;
    for (int r = 0; r < m; ++r) z[idx[r]] = b[r];
    return true;
  };
  // From a feasible x (>= 0, zero outside the passive set): the passive
  // set's minimiser, moving only as far as feasibility allows and dropping
  // the terms that reach 0, until it is feasible. False when singular.
  auto settle = [&] {
    for (int inner = 0; inner < 3 * n; ++inner) {
      if (!solve_passive()) return false;
      bool feasible = true;
      for (int i = 0; i < n; ++i)
        if (passive[i] && z[i] <= 0) feasible = false;
      if (feasible) {
        x = z;
        return true;
      }
      double alpha = 1.0;
      for (int i = 0; i < n; ++i)
        if (passive[i] && z[i] <= 0) alpha = std::min(alpha, x[i] / (x[i] - z[i]));
      for (int i = 0; i < n; ++i) {
        x[i] += alpha * (z[i] - x[i]);
        if (passive[i] && x[i] <= 1e-300) {
          passive[i] = false;
          x[i] = 0;
        }
      }
    }
    return true;
  };

  // Warm start: the previous fit's terms. Refitting after one more step
  // rarely changes which terms are in use, so this is one solve and a
  // check rather than adding the terms back one at a time.
  if (static_cast<int>(start.size()) == n) {
    for (int i = 0; i < n; ++i) {
      passive[i] = start[i] > 0;
      x[i] = passive[i] ? start[i] : 0.0;
    }
    if (!settle()) {
      x.assign(n, 0.0);
      passive.assign(n, false);
    }
  }

  double scale = 0;
  for (int i = 0; i < n; ++i) scale = std::max(scale, std::abs(atb[i]));
  const double tol = 1e-12 * std::max(scale, 1e-300);
  for (int outer = 0; outer < 3 * n; ++outer) {
    int best = -1;
    double best_g = tol;
    for (int j = 0; j < n; ++j) {
      if (passive[j]) continue;
      const double g = gradient(j);
      if (g > best_g) best_g = g, best = j;
    }
    if (best < 0) break;
    passive[best] = true;
    if (!settle()) {
      passive[best] = false;
      return x;
    }
  }
  return x;
}

}  // namespace flashdraft::engine
