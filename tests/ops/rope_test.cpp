#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "random_data.h"

namespace flashdraft::ops {
namespace {

using testing::random_floats;

TEST(RopeInvFreq, HandComputedValues) {
  float f[4];
  cpu::rope_inv_freq(1e6, 8, f);  // 1e6^(-0), 1e6^(-1/4), 1e6^(-1/2), 1e6^(-3/4)
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[1], 0.031622776601683794f);
  EXPECT_FLOAT_EQ(f[2], 0.001f);
  EXPECT_FLOAT_EQ(f[3], 3.1622776601683795e-05f);
  float g[2];
  cpu::rope_inv_freq(10000.0, 4, g);
  EXPECT_FLOAT_EQ(g[0], 1.0f);
  EXPECT_FLOAT_EQ(g[1], 0.01f);
}

TEST(RopeNeox, HandComputedRotation) {
  // One head, head_dim 4, position 3, inv_freq [1, 0.01]: pairs are (0, 2)
  // and (1, 3), rotated by angles 3 and 0.03.
  float x[] = {1, 2, 3, 4};
  const float inv[] = {1.0f, 0.01f};
  const int64_t pos[] = {3};
  cpu::rope_neox(x, pos, inv, 1, 1, 4);
  const double c0 = std::cos(3.0), s0 = std::sin(3.0), c1 = std::cos(0.03), s1 = std::sin(0.03);
  EXPECT_NEAR(x[0], 1 * c0 - 3 * s0, 1e-6);
  EXPECT_NEAR(x[2], 3 * c0 + 1 * s0, 1e-6);
  EXPECT_NEAR(x[1], 2 * c1 - 4 * s1, 1e-6);
  EXPECT_NEAR(x[3], 4 * c1 + 2 * s1, 1e-6);
}

TEST(RopeNeox, PositionZeroIsIdentity) {
  auto x = random_floats(3 * 16, 20);
  const auto before = x;
  float inv[8];
  cpu::rope_inv_freq(1e6, 16, inv);
  const int64_t pos[] = {0};
  cpu::rope_neox(x.data(), pos, inv, 1, 3, 16);
  EXPECT_EQ(x, before);
}

TEST(RopeNeox, MatchesNaivePerRowPositionsAndHeads) {
  const int64_t rows = 5, heads = 3, hd = 16;
  const int64_t pos[] = {0, 1, 7, 250, 4095};
  auto x = random_floats(rows * heads * hd, 21);
  const auto orig = x;
  float inv[8];
  cpu::rope_inv_freq(1e6, hd, inv);
  cpu::rope_neox(x.data(), pos, inv, rows, heads, hd);
  double max_err = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double ang = static_cast<double>(pos[r]) * inv[i];
        const int64_t base = (r * heads + h) * hd;
        const double a = orig[base + i], b = orig[base + i + hd / 2];
        max_err = std::max(max_err, std::abs(x[base + i] - (a * std::cos(ang) - b * std::sin(ang))));
        max_err = std::max(max_err, std::abs(x[base + i + hd / 2] - (b * std::cos(ang) + a * std::sin(ang))));
      }
  // Large positions carry the float32 rounding of the angle (as HF does): ~pos * 6e-8.
  EXPECT_LT(max_err, 1e-3);
}

TEST(RopeNeox, ScoresDependOnlyOnRelativePosition) {
  const int64_t hd = 32;
  float inv[16];
  cpu::rope_inv_freq(10000.0, hd, inv);
  const auto q0 = random_floats(hd, 22), k0 = random_floats(hd, 23);
  auto score = [&](int64_t pq, int64_t pk) {
    auto q = q0, k = k0;
    cpu::rope_neox(q.data(), &pq, inv, 1, 1, hd);
    cpu::rope_neox(k.data(), &pk, inv, 1, 1, hd);
    double s = 0;
    for (int64_t i = 0; i < hd; ++i) s += static_cast<double>(q[i]) * k[i];
    return s;
  };
  EXPECT_NEAR(score(10, 3), score(17, 10), 1e-4);
  EXPECT_GT(std::abs(score(10, 3) - score(10, 4)), 1e-3);
}

}  // namespace
}  // namespace flashdraft::ops
