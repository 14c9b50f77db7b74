#include "io/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace flashdraft::io {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::F32), 4u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_STREQ(dtype_name(DType::BF16), "BF16");
  EXPECT_EQ(parse_dtype("F16"), DType::F16);
  EXPECT_EQ(parse_dtype("F32"), DType::F32);
  EXPECT_EQ(parse_dtype("BF16"), DType::BF16);
  EXPECT_FALSE(parse_dtype("I64").has_value());
  EXPECT_FALSE(parse_dtype("bf16").has_value());  // safetensors spells dtypes in capitals
}

TEST(DType, Bf16KnownValues) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(bf16_to_f32(0x3EAB), 0.333984375f);  // bf16 rounding of 1/3
  EXPECT_EQ(bf16_to_f32(0x7F7F), 3.38953139e38f);  // largest finite bf16
  EXPECT_EQ(bf16_to_f32(0x0001), std::ldexp(1.0f, -133));  // smallest subnormal
  EXPECT_EQ(bf16_to_f32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16_to_f32(0xFF80), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7FC0)));
  const float neg_zero = bf16_to_f32(0x8000);
  EXPECT_EQ(neg_zero, 0.0f);
  EXPECT_TRUE(std::signbit(neg_zero));
}

TEST(DType, F16KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);               // largest finite
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03FF), 1023 * std::ldexp(1.0f, -24));  // largest subnormal
  EXPECT_EQ(f16_to_f32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7C01)));  // signalling nan stays nan, not inf
  const float neg_zero = f16_to_f32(0x8000);
  EXPECT_EQ(neg_zero, 0.0f);
  EXPECT_TRUE(std::signbit(neg_zero));
}

// Every f16 bit pattern against the textbook formula, computed a different
// way (ldexp on the integer significand) from the bit-twiddling under test.
TEST(DType, F16AllPatternsMatchFormula) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const int sign = (bits >> 15) ? -1 : 1;
    const int exponent = (bits >> 10) & 0x1f;
    const int mantissa = bits & 0x3ff;
    const float got = f16_to_f32(static_cast<uint16_t>(bits));
    if (exponent == 0x1f) {
      if (mantissa == 0) {
        EXPECT_EQ(got, sign * std::numeric_limits<float>::infinity()) << bits;
      } else {
        EXPECT_TRUE(std::isnan(got)) << bits;
      }
      continue;
    }
    const double want = exponent == 0 ? sign * std::ldexp(double(mantissa), -24)
                                      : sign * std::ldexp(double(1024 + mantissa), exponent - 25);
    ASSERT_EQ(double(got), want) << "f16 bits 0x" << std::hex << bits;
    ASSERT_EQ(std::signbit(got), sign < 0) << bits;
  }
}

TEST(DType, WidenHandlesUnalignedInput) {
  // Safetensors only promises byte offsets; read from an odd address.
  alignas(8) unsigned char buffer[1 + 3 * 4];
  const float values[3] = {1.5f, -0.25f, 1e-30f};
  std::memcpy(buffer + 1, values, sizeof(values));
  float out[3];
  widen_to_f32(DType::F32, reinterpret_cast<const std::byte*>(buffer + 1), 3, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -0.25f);
  EXPECT_EQ(out[2], 1e-30f);

  const uint16_t halves[2] = {0x3C00, 0xC000};
  std::memcpy(buffer + 1, halves, sizeof(halves));
  widen_to_f32(DType::F16, reinterpret_cast<const std::byte*>(buffer + 1), 2, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  widen_to_f32(DType::BF16, reinterpret_cast<const std::byte*>(buffer + 1), 2, out);
  EXPECT_EQ(out[0], 0.0078125f);  // bf16 0x3C00 = 2^-7
  EXPECT_EQ(out[1], -2.0f);
}

}  // namespace
}  // namespace flashdraft::io
