#pragma once
// Chi-square goodness of fit for the sampling statistics tests (ops and
// engine): one critical value, one pooled statistic.
#include <cmath>
#include <map>

namespace flashdraft::testing {

// Upper-tail chi-square quantile for `df` degrees of freedom, given the
// matching standard-normal quantile z (Wilson-Hilferty).
inline double chi_square_critical(int df, double z) {
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}
constexpr double kZAlpha1e4 = 3.719;  // P(N(0,1) > 3.719) = 1e-4

struct ChiSquare {
  double statistic = 0;
  int cells = 0;  // degrees of freedom + 1
};

// Observed counts of `runs` draws against outcome probabilities; outcomes
// expected fewer than 5 times are pooled into one cell (the usual validity
// rule). Outcomes absent from `probs` are not counted here: callers check
// that none was drawn.
template <class Outcome>
ChiSquare pooled_chi_square(const std::map<Outcome, double>& probs, const std::map<Outcome, int>& counts, int runs) {
  ChiSquare r;
  double pooled_expected = 0;
  int pooled_count = 0;
  for (const auto& [outcome, p] : probs) {
    const double e = p * runs;
    const auto it = counts.find(outcome);
    const int n = it == counts.end() ? 0 : it->second;
    if (e < 5) {
      pooled_expected += e;
      pooled_count += n;
      continue;
    }
    r.statistic += (n - e) * (n - e) / e;
    ++r.cells;
  }
  if (pooled_expected > 0) {
    r.statistic += (pooled_count - pooled_expected) * (pooled_count - pooled_expected) / pooled_expected;
    ++r.cells;
  }
  return r;
}

}  // namespace flashdraft::testing
