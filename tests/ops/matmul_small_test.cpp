// The small-row matmul: batch invariance (a row's bits do not depend on n or
// on its neighbours), accuracy against a double reference, and bias handling,
// for the kernel this machine picks and for every build this CPU can run.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ops/cpu/matmul_small.h"
#include "ops/ops.h"
#include "random_data.h"

namespace flashdraft::ops {
namespace {

using testing::max_rel_error;
using testing::naive_matmul_wt;
using testing::random_floats;

using Kernel = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t);

struct NamedKernel {
  std::string name;
  Kernel fn;
};

std::vector<NamedKernel> kernels() {
  std::vector<NamedKernel> ks{{"dispatched", cpu::matmul_small}, {"matmul_wt", cpu::matmul_wt}};
#if defined(__x86_64__) && defined(__GNUC__)
  ks.push_back({"sse2", [](const float* x, const float* w, const float* b, float* y, int64_t n, int64_t in,
                           int64_t out) { cpu::detail::matmul_small_sse(x, w, b, y, n, in, out, out); }});
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    ks.push_back({"avx2-fma", [](const float* x, const float* w, const float* b, float* y, int64_t n, int64_t in,
                                 int64_t out) { cpu::detail::matmul_small_avx2(x, w, b, y, n, in, out, out); }});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx512f"))
    ks.push_back({"avx512f", [](const float* x, const float* w, const float* b, float* y, int64_t n, int64_t in,
                                int64_t out) { cpu::detail::matmul_small_avx512(x, w, b, y, n, in, out, out); }});
#endif
  return ks;
}

struct Shape {
  int64_t in, out;
};

class MatmulSmall : public ::testing::TestWithParam<Shape> {};

// Each probe row is computed alone (n = 1), then placed at several positions
// inside batches of random neighbour rows of many sizes (covering every
// register-block remainder and more than one L2 chunk); its outputs must keep
// the same bits.
TEST_P(MatmulSmall, RowBitsIndependentOfBatch) {
  const auto [in, out] = GetParam();
  const auto w = random_floats(out * in, 11);
  const auto b = random_floats(out, 12);
  const int64_t max_rows = 300;
  const auto filler = random_floats(max_rows * in, 13);
  const auto probe = random_floats(in, 14);
  for (const auto& k : kernels()) {
    for (const float* bias : {static_cast<const float*>(nullptr), b.data()}) {
      std::vector<float> alone(out);
      k.fn(probe.data(), w.data(), bias, alone.data(), 1, in, out);
      for (int64_t n : {2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31, 32, 33, 64, 128, 129, 300}) {
        if (n > max_rows) continue;
        for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
          std::vector<float> x(filler.begin(), filler.begin() + n * in);
          std::copy(probe.begin(), probe.end(), x.begin() + pos * in);
          std::vector<float> y(n * out, 7.0f);
          k.fn(x.data(), w.data(), bias, y.data(), n, in, out);
          ASSERT_EQ(std::memcmp(alone.data(), y.data() + pos * out, out * sizeof(float)), 0)
              << k.name << " n=" << n << " pos=" << pos << (bias ? " with bias" : "");
        }
      }
    }
  }
}

TEST_P(MatmulSmall, MatchesDoubleReference) {
  const auto [in, out] = GetParam();
  const auto w = random_floats(out * in, 21);
  const auto b = random_floats(out, 22);
  for (int64_t n : {1, 3, 4, 16, 37}) {
    const auto x = random_floats(n * in, 23 + static_cast<uint32_t>(n));
    for (const auto& k : kernels()) {
      std::vector<float> y(n * out, 123.0f);  // garbage: must be overwritten, not accumulated into
      k.fn(x.data(), w.data(), nullptr, y.data(), n, in, out);
      EXPECT_LT(max_rel_error(y, naive_matmul_wt(x, w, nullptr, n, in, out)), 1e-5) << k.name << " n=" << n;
      std::fill(y.begin(), y.end(), 123.0f);
      k.fn(x.data(), w.data(), b.data(), y.data(), n, in, out);
      EXPECT_LT(max_rel_error(y, naive_matmul_wt(x, w, b.data(), n, in, out)), 1e-5) << k.name << " n=" << n << " bias";
    }
  }
}

// The bias is added once, after the whole dot product: y(bias) is exactly
// y(no bias) + bias in float, for every output.
TEST_P(MatmulSmall, BiasAddedAfterTheDotProduct) {
  const auto [in, out] = GetParam();
  const int64_t n = 9;
  const auto x = random_floats(n * in, 31);
  const auto w = random_floats(out * in, 32);
  const auto b = random_floats(out, 33, 10.0f);
  for (const auto& k : kernels()) {
    std::vector<float> plain(n * out), biased(n * out);
    k.fn(x.data(), w.data(), nullptr, plain.data(), n, in, out);
    k.fn(x.data(), w.data(), b.data(), biased.data(), n, in, out);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t o = 0; o < out; ++o)
        ASSERT_EQ(biased[r * out + o], plain[r * out + o] + b[o]) << k.name << " row " << r << " output " << o;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulSmall,
                         ::testing::Values(Shape{384, 1024}, Shape{1024, 384}, Shape{384, 515}, Shape{33, 19},
                                           Shape{1, 5}, Shape{7, 8}, Shape{4100, 3}),
                         [](const auto& info) {
                           return "in" + std::to_string(info.param.in) + "_out" + std::to_string(info.param.out);
                         });

// Big calls split their outputs over threads; the bits must not change.
TEST(MatmulSmall, BitsIndependentOfThreadCount) {
  const int64_t n = 200, in = 384, out = 1000;
  const auto x = random_floats(n * in, 41);
  const auto w = random_floats(out * in, 42);
  const auto b = random_floats(out, 43);
  const int saved = cpu::num_threads();
  cpu::set_num_threads(1);
  std::vector<float> one(n * out);
  cpu::matmul_wt(x.data(), w.data(), b.data(), one.data(), n, in, out);
  for (int t : {2, 3, 5}) {
    cpu::set_num_threads(t);
    ASSERT_EQ(cpu::num_threads(), t);
    std::vector<float> many(n * out, 9.0f);
    cpu::matmul_wt(x.data(), w.data(), b.data(), many.data(), n, in, out);
    EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0) << t << " threads";
  }
  cpu::set_num_threads(saved);
}

TEST(MatmulSmall, ReportsItsBuild) {
  const std::string isa = cpu::matmul_small_isa();
  EXPECT_TRUE(isa == "avx512f" || isa == "avx2-fma" || isa == "sse2" || isa == "generic") << isa;
}

// The AVX-512 build runs the AVX2 build's arithmetic two rows to a register:
// every output of every row count (paired and odd rows, every block
// remainder, more than one L2 chunk, tails of the 8-lane steps) must have
// the AVX2 build's bits, so machines with and without AVX-512 agree.
TEST(MatmulSmall, Avx512HasTheAvx2Bits) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("avx512f"))
    GTEST_SKIP() << "this CPU has no AVX-512";
  for (const Shape s : {Shape{384, 1024}, Shape{1152, 384}, Shape{387, 13}, Shape{8, 7}, Shape{7, 9}, Shape{200, 97}}) {
    const auto w = random_floats(s.out * s.in, 51);
    const auto b = random_floats(s.out, 52);
    for (int64_t n : {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 64, 171, 300}) {
      const auto x = random_floats(n * s.in, 53 + static_cast<uint32_t>(n));
      for (const float* bias : {static_cast<const float*>(nullptr), b.data()}) {
        std::vector<float> avx2(n * s.out, 1.0f), avx512(n * s.out, 2.0f);
        cpu::detail::matmul_small_avx2(x.data(), w.data(), bias, avx2.data(), n, s.in, s.out, s.out);
        cpu::detail::matmul_small_avx512(x.data(), w.data(), bias, avx512.data(), n, s.in, s.out, s.out);
        ASSERT_EQ(std::memcmp(avx2.data(), avx512.data(), avx2.size() * sizeof(float)), 0)
            << "in " << s.in << " out " << s.out << " n " << n << (bias ? " with bias" : "");
      }
    }
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

}  // namespace
}  // namespace flashdraft::ops
