#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "ops/ops.h"
#include "random_data.h"

namespace flashdraft::ops {
namespace {

using testing::max_rel_error;
using testing::random_floats;

// Straight from the definition, with the kv head for query head h found the
// way HF's repeat_kv lays them out: heads [j*g, (j+1)*g) share kv head j.
std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& v, int64_t nq, int64_t nkv,
                                    int64_t q_pos0, int64_t nh, int64_t nkvh, int64_t hd, double scale,
                                    bool causal) {
  std::vector<double> out(nq * nh * hd, 0.0);
  const int64_t g = nh / nkvh;
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kvh = h / g;
      std::vector<double> s(nkv, -INFINITY);
      double mx = -INFINITY;
      for (int64_t j = 0; j < nkv; ++j) {
        if (causal && j > q_pos0 + i) continue;
        double d = 0;
        for (int64_t e = 0; e < hd; ++e)
          d += static_cast<double>(q[(i * nh + h) * hd + e]) * k[(j * nkvh + kvh) * hd + e];
        s[j] = d * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < nkv; ++j) sum += std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx);
      for (int64_t j = 0; j < nkv; ++j) {
        if (std::isinf(s[j])) continue;
        const double p = std::exp(s[j] - mx) / sum;
        for (int64_t e = 0; e < hd; ++e) out[(i * nh + h) * hd + e] += p * v[(j * nkvh + kvh) * hd + e];
      }
    }
  return out;
}

struct Case {
  int64_t nq, nkv, q_pos0, nh, nkvh, hd;
  bool causal;
};

class Attention : public ::testing::TestWithParam<Case> {};

TEST_P(Attention, MatchesNaive) {
  const Case c = GetParam();
  const auto q = random_floats(c.nq * c.nh * c.hd, 30, 2.0f);
  const auto k = random_floats(c.nkv * c.nkvh * c.hd, 31, 2.0f);
  const auto v = random_floats(c.nkv * c.nkvh * c.hd, 32);
  std::vector<float> out(c.nq * c.nh * c.hd, 99.0f);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.hd));
  cpu::attention(q.data(), k.data(), v.data(), out.data(), c.nq, c.nkv, c.q_pos0, c.nh, c.nkvh, c.hd,
                 static_cast<float>(scale), c.causal);
  EXPECT_LT(max_rel_error(out, naive_attention(q, k, v, c.nq, c.nkv, c.q_pos0, c.nh, c.nkvh, c.hd,
                                               scale, c.causal)),
            1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Attention,
    ::testing::Values(Case{6, 6, 0, 4, 2, 16, true},        // prefill, GQA 2:1
                      Case{1, 9, 8, 4, 2, 16, true},        // decode over a cache
                      Case{5, 12, 7, 6, 3, 8, true},        // chunk appended to a cache
                      Case{5, 12, 7, 4, 1, 8, false},       // bidirectional block (DFlash), MQA
                      Case{300, 300, 0, 2, 2, 8, true},     // more rows than one block
                      Case{200, 450, 250, 4, 2, 16, true},  // long chunk after a long cache
                      Case{4, 4, 0, 8, 8, 4, false}));      // plain multi-head

TEST(Attention, RejectsHeadsThatDoNotGroup) {
  std::vector<float> x(3 * 4 * 4);
  EXPECT_THROW(cpu::attention(x.data(), x.data(), x.data(), x.data(), 1, 1, 0, 3, 2, 4, 1.0f, true),
               Error);
}

}  // namespace
}  // namespace flashdraft::ops
