// ops/fp8_grid.h against hand-checked values and an independent reference:
// the nearest of all grid values, found by search in double precision.
#include "ops/fp8_grid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ops/backend.h"

namespace flashdraft::ops {
namespace {

// The grid of scale 2^e, by definition: e4m3 normals (exponent -6 .. 8, 3
// mantissa bits, below 448 = 1.75 * 2^8) and zero, both signs.
std::vector<double> grid(int e) {
  std::vector<double> g{0.0};
  for (int E = -6; E <= 8; ++E)
    for (int m = 0; m < 8; ++m) {
      const double v = std::ldexp(1.0 + m / 8.0, E + e);
      if (v > std::ldexp(448.0, e)) continue;
      g.push_back(v);
      g.push_back(-v);
    }
  return g;
}

// Nearest grid value to w; a tie goes to the value whose last mantissa bit is 0 (0 counting as even).
double nearest(const std::vector<double>& g, double w, int e) {
  double best = 0.0, dist = std::numeric_limits<double>::infinity();
  for (double v : g) {
    const double d = std::fabs(v - w);
    const auto even = [&](double x) {
      if (x == 0.0) return true;
      int E;
      const double f = std::frexp(std::fabs(x) / std::ldexp(1.0, e), &E);  // f in [0.5, 1): mantissa bits of 2f
      return static_cast<int>(std::lround(f * 16.0)) % 2 == 0;
    };
    if (d < dist || (d == dist && even(v) && !even(best))) best = v, dist = d;
  }
  return best;
}

TEST(Fp8Grid, HandCheckedCodes) {
  EXPECT_EQ(fp8::encode(1.0f, 0), 0x38);   // exponent 0 (+7), mantissa 0
  EXPECT_EQ(fp8::encode(-1.5f, 0), 0xbc);  // sign, exponent 7, mantissa 4
  EXPECT_EQ(fp8::encode(448.0f, 0), 0x7e);
  EXPECT_EQ(fp8::encode(1000.0f, 0), 0x7e);                   // saturates, never NaN (0x7f)
  EXPECT_EQ(fp8::encode(std::ldexp(1.0f, -6), 0), 0x08);      // the smallest normal
  EXPECT_EQ(fp8::encode(std::ldexp(1.0f, -7), 0), 0x00);      // the tie below it goes to 0
  EXPECT_EQ(fp8::encode(std::ldexp(1.5f, -7), 0), 0x08);      // above the tie: up
  EXPECT_EQ(fp8::encode(-std::ldexp(1.0f, -8), 0), 0x00);     // small negatives are +0
  EXPECT_EQ(fp8::encode(1.0625f, 0), 0x38);                   // tie between 1 and 1.125: even (1)
  EXPECT_EQ(fp8::encode(1.1875f, 0), 0x3a);                   // tie between 1.125 and 1.25: even (1.25)
  EXPECT_EQ(fp8::encode(std::numeric_limits<float>::denorm_min(), -120), 0x00);  // subnormals count as 0
  EXPECT_EQ(fp8::encode(3.0f, 2), 0x34);                      // 3 / 4 = 0.75 = 1.5 * 2^-1
  EXPECT_FLOAT_EQ(fp8::decode(0x34, 2), 3.0f);
  EXPECT_EQ(fp8::decode(0x00, 5), 0.0f);
  EXPECT_FALSE(std::signbit(fp8::decode(0x00, 5)));
}

TEST(Fp8Grid, RowExponentIsTheLeastThatFits) {
  EXPECT_EQ(fp8::row_exponent(fp8::magnitude(448.0f)), 0);
  EXPECT_EQ(fp8::row_exponent(fp8::magnitude(449.0f)), 1);
  EXPECT_EQ(fp8::row_exponent(fp8::magnitude(224.0f)), -1);
  EXPECT_EQ(fp8::row_exponent(fp8::magnitude(1.0f)), -8);
  EXPECT_EQ(fp8::row_exponent(0), 0);
  EXPECT_EQ(fp8::row_exponent(fp8::magnitude(1e-37f)), fp8::kMinExp);
  EXPECT_EQ(fp8::row_exponent(fp8::magnitude(1e9f)), fp8::kMaxExp);
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> log2(-40.0, 15.0);
  for (int i = 0; i < 20000; ++i) {
    const float a = static_cast<float>(std::exp2(log2(gen)));
    const int e = fp8::row_exponent(fp8::magnitude(a));
    ASSERT_LE(a, std::ldexp(448.0, e)) << a;
    if (e > fp8::kMinExp) ASSERT_GT(a, std::ldexp(448.0, e - 1)) << a;
  }
}

TEST(Fp8Grid, EveryCodeRoundTrips) {
  for (int e : {-120, -9, 0, 7})
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<uint8_t>(c);
      const bool never_made = (c & 0x7f) == 0x7f || c == 0x80 || ((c & 0x78) == 0 && (c & 7) != 0);
      if (never_made) continue;  // NaN, -0, subnormals
      EXPECT_EQ(fp8::encode(fp8::decode(code, e), e), code) << "code " << c << " scale 2^" << e;
    }
}

TEST(Fp8Grid, RoundsToTheNearestGridValue) {
  std::mt19937 gen(11);
  std::uniform_real_distribution<double> log2(-12.0, 9.5), unit(0.0, 1.0);
  for (int e : {-9, 0, 3}) {
    const std::vector<double> g = grid(e);
    for (int i = 0; i < 4000; ++i) {
      const double mag = std::ldexp(std::exp2(log2(gen)), e);
      const float w = static_cast<float>(unit(gen) < 0.5 ? -mag : mag);
      const double want = std::fabs(w) > std::ldexp(448.0, e) ? std::copysign(std::ldexp(448.0, e), w)
                                                               : nearest(g, w, e);
      ASSERT_EQ(static_cast<double>(fp8::round(w, e)), want) << "w " << w << " scale 2^" << e;
    }
  }
}

// The backends' own rounding (Backend::prepare_matmul_weight with Fp8, the
// default every backend without its own uses): each row on its grid.
TEST(Fp8Grid, PreparedWeightRowsLieOnTheirGrids) {
  auto be = make_cpu_backend();
  const int64_t rows = 5, cols = 300;
  std::mt19937 gen(3);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (auto& v : w) v = d(gen);
  w[7] = 3.5f;  // row 0's scale is set by one large value
  for (int64_t c = 0; c < cols; ++c) w[static_cast<size_t>(4 * cols + c)] = 0.0f;  // an all-zero row
  auto t = be->alloc_tensor(DType::F32, rows, cols);
  be->upload(t.t, w.data(), DType::F32);
  be->prepare_matmul_weight(t, WeightQuant::Fp8);
  EXPECT_EQ(t.t.quant, WeightQuant::Fp8);
  std::vector<float> got(w.size());
  be->download(t.t, got.data());
  for (int64_t r = 0; r < rows; ++r) {
    double absmax = 0.0;
    for (int64_t c = 0; c < cols; ++c) absmax = std::max(absmax, std::fabs(static_cast<double>(w[r * cols + c])));
    int e = 0;
    while (absmax > 0 && absmax > std::ldexp(448.0, e)) ++e;
    while (absmax > 0 && absmax <= std::ldexp(448.0, e - 1)) --e;
    const std::vector<double> g = grid(e);
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(static_cast<double>(got[r * cols + c]), nearest(g, w[r * cols + c], e)) << "row " << r << " col " << c;
  }
}

}  // namespace
}  // namespace flashdraft::ops
