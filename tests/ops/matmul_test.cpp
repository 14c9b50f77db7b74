#include <gtest/gtest.h>

#include "ops/ops.h"
#include "random_data.h"

namespace flashdraft::ops {
namespace {

using testing::max_rel_error;
using testing::naive_matmul_wt;
using testing::random_floats;

struct Shape {
  int64_t n, in, out;
};

class MatmulWt : public ::testing::TestWithParam<Shape> {};

TEST_P(MatmulWt, MatchesNaiveWithAndWithoutBias) {
  const auto [n, in, out] = GetParam();
  const auto x = random_floats(n * in, 1);
  const auto w = random_floats(out * in, 2);
  const auto b = random_floats(out, 3);
  std::vector<float> y(n * out, 123.0f);  // garbage: beta must not read it
  cpu::matmul_wt(x.data(), w.data(), nullptr, y.data(), n, in, out);
  EXPECT_LT(max_rel_error(y, naive_matmul_wt(x, w, nullptr, n, in, out)), 1e-5);
  std::fill(y.begin(), y.end(), 123.0f);
  cpu::matmul_wt(x.data(), w.data(), b.data(), y.data(), n, in, out);
  EXPECT_LT(max_rel_error(y, naive_matmul_wt(x, w, b.data(), n, in, out)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulWt,
                         ::testing::Values(Shape{1, 64, 48}, Shape{7, 33, 19}, Shape{130, 96, 257},
                                           Shape{3, 1, 5}));

TEST(MatmulWt, UsesHuggingFaceLinearLayout) {
  // x = [1, 2], W = [[1, 0], [0, 1], [3, 4]] (out=3, in=2) -> y = [1, 2, 11].
  const float x[] = {1, 2};
  const float w[] = {1, 0, 0, 1, 3, 4};
  float y[3];
  cpu::matmul_wt(x, w, nullptr, y, 1, 2, 3);
  EXPECT_FLOAT_EQ(y[0], 1.0f);
  EXPECT_FLOAT_EQ(y[1], 2.0f);
  EXPECT_FLOAT_EQ(y[2], 11.0f);
}

}  // namespace
}  // namespace flashdraft::ops
