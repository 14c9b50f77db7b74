// Every CUDA op against its CPU reference (ops::cpu) on fresh random inputs.
// On machines without a GPU each test is reported as SKIPPED, never as passed.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/cuda/device.h"
#include "ops/cuda/ops.h"
#include "ops/ops.h"

namespace cuda = flashdraft::ops::cuda;
namespace cpu = flashdraft::ops::cpu;

namespace {

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
  std::vector<float> random(size_t n, float scale = 1.f) {
    std::normal_distribution<float> d(0.f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng_);
    return v;
  }
  static cuda::DeviceBuffer to_device(const std::vector<float>& v) {
    cuda::DeviceBuffer b(v.size() * sizeof(float));
    b.upload(v.data(), v.size() * sizeof(float));
    return b;
  }
  static std::vector<float> to_host(const cuda::DeviceBuffer& b, size_t n) {
    std::vector<float> v(n);
    b.download(v.data(), n * sizeof(float));
    return v;
  }
  static double rel_l2(const std::vector<float>& a, const std::vector<float>& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
      den += double(ref[i]) * ref[i];
    }
    return std::sqrt(num / den);
  }
  std::mt19937 rng_{std::random_device{}()};
};

TEST_F(CudaOps, RmsNormMatchesCpu) {
  for (auto [rows, dim] : {std::pair<int64_t, int64_t>{1, 64}, {7, 4096}, {33, 1000}}) {
    auto x = random(rows * dim, 3.f), w = random(dim);
    std::vector<float> ref(x.size());
    cpu::rmsnorm(x.data(), w.data(), ref.data(), rows, dim, 1e-6f);
    auto dx = to_device(x), dw = to_device(w);
    cuda::DeviceBuffer dy(x.size() * sizeof(float));
    cuda::check(cudaMemset(dy.as<void>(), 0xff, dy.bytes()), "poison");  // NaN: unwritten rows fail
    cuda::rmsnorm(dx.as<float>(), dw.as<float>(), dy.as<float>(), rows, dim, 1e-6f);
    EXPECT_LT(rel_l2(to_host(dy, x.size()), ref), 1e-6) << rows << "x" << dim;
  }
}

TEST_F(CudaOps, SiluGluMatchesCpu) {
  for (int64_t n : {1, 255, 1 << 20}) {
    auto g = random(n, 4.f), u = random(n);
    std::vector<float> ref(n);
    cpu::silu_glu(g.data(), u.data(), ref.data(), n);
    auto dg = to_device(g), du = to_device(u);
    cuda::DeviceBuffer out(n * sizeof(float));
    cuda::check(cudaMemset(out.as<void>(), 0xff, out.bytes()), "poison");
    cuda::silu_glu(dg.as<float>(), du.as<float>(), out.as<float>(), n);
    EXPECT_LT(rel_l2(to_host(out, n), ref), 1e-6) << n;
  }
}

}  // namespace
