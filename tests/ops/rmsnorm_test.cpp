#include <gtest/gtest.h>

#include "ops/ops.h"
#include "random_data.h"

namespace flashdraft::ops {
namespace {

using testing::max_rel_error;
using testing::random_floats;

std::vector<double> naive_rmsnorm(const std::vector<float>& x, const std::vector<float>& w,
                                  int64_t rows, int64_t dim, double eps) {
  std::vector<double> y(rows * dim);
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (int64_t i = 0; i < dim; ++i) ms += static_cast<double>(x[r * dim + i]) * x[r * dim + i];
    ms /= dim;
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = w[i] * x[r * dim + i] / std::sqrt(ms + eps);
  }
  return y;
}

TEST(RmsNorm, MatchesNaive) {
  const int64_t rows = 9, dim = 1024;
  const auto x = random_floats(rows * dim, 10, 3.0f);
  const auto w = random_floats(dim, 11);
  std::vector<float> y(rows * dim);
  cpu::rmsnorm(x.data(), w.data(), y.data(), rows, dim, 1e-6f);
  EXPECT_LT(max_rel_error(y, naive_rmsnorm(x, w, rows, dim, 1e-6)), 2e-6);
}

TEST(RmsNorm, InPlaceGivesSameResult) {
  const int64_t rows = 4, dim = 16;
  auto x = random_floats(rows * dim, 12);
  const auto w = random_floats(dim, 13);
  std::vector<float> y(rows * dim);
  cpu::rmsnorm(x.data(), w.data(), y.data(), rows, dim, 1e-5f);
  cpu::rmsnorm(x.data(), w.data(), x.data(), rows, dim, 1e-5f);
  EXPECT_EQ(x, y);
}

TEST(RmsNorm, EpsMattersForTinyInputs) {
  // mean(x^2) = 1e-6 and eps = 1e-6: the result is x / sqrt(2e-6), not x / 1e-3.
  const float x[] = {1e-3f, -1e-3f};
  const float w[] = {1.0f, 2.0f};
  float y[2];
  cpu::rmsnorm(x, w, y, 1, 2, 1e-6f);
  EXPECT_NEAR(y[0], 1e-3 / std::sqrt(2e-6), 1e-5);
  EXPECT_NEAR(y[1], -2e-3 / std::sqrt(2e-6), 1e-5);
}

}  // namespace
}  // namespace flashdraft::ops
