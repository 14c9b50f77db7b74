#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "ops/ops.h"
#include "random_data.h"

namespace flashdraft::ops {
namespace {

using testing::max_rel_error;
using testing::random_floats;

TEST(SiluGlu, MatchesNaive) {
  const auto g = random_floats(1000, 40, 4.0f), u = random_floats(1000, 41);
  std::vector<float> out(1000);
  cpu::silu_glu(g.data(), u.data(), out.data(), 1000);
  std::vector<double> want(1000);
  for (int i = 0; i < 1000; ++i) want[i] = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
  EXPECT_LT(max_rel_error(out, want), 1e-6);
}

TEST(SiluGlu, SaturatesWithoutNaN) {
  const float g[] = {-200.0f, 200.0f}, u[] = {1.0f, 1.0f};
  float out[2];
  cpu::silu_glu(g, u, out, 2);
  EXPECT_EQ(out[0], -0.0f);
  EXPECT_FLOAT_EQ(out[1], 200.0f);
}

TEST(Embedding, CopiesRowsAndRejectsBadIds) {
  const std::vector<float> table = {0, 1, 10, 11, 20, 21};  // vocab 3, dim 2
  const int32_t ids[] = {2, 0, 2};
  float out[6];
  cpu::embedding(table.data(), 3, 2, ids, 3, out);
  EXPECT_EQ(std::vector<float>(out, out + 6), (std::vector<float>{20, 21, 0, 1, 20, 21}));
  const int32_t bad[] = {1, 3};
  EXPECT_THROW(cpu::embedding(table.data(), 3, 2, bad, 2, out), Error);
  const int32_t negative[] = {-1};
  EXPECT_THROW(cpu::embedding(table.data(), 3, 2, negative, 1, out), Error);
}

TEST(Add, AddsInPlace) {
  std::vector<float> y = {1, 2, 3};
  const std::vector<float> x = {10, 20, 30};
  cpu::add(y.data(), x.data(), 3);
  EXPECT_EQ(y, (std::vector<float>{11, 22, 33}));
}

TEST(Argmax, FirstMaximumWins) {
  const float x[] = {1, 5, -2, 5, 3};
  EXPECT_EQ(cpu::argmax(x, 5), 1);
  const float y[] = {-3, -1, -2};
  EXPECT_EQ(cpu::argmax(y, 3), 1);
}

}  // namespace
}  // namespace flashdraft::ops
