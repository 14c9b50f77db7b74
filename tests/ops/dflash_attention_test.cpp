// dflash_attention against a naive double-precision version that applies
// DFLASH.md section 3's visibility rule key by key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "core/error.h"
#include "ops/ops.h"
#include "random_data.h"

namespace flashdraft::ops {
namespace {

using testing::max_rel_error;
using testing::random_floats;

// ctx_k/ctx_v: the context contiguous by position [pos0, nkvh, hd].
std::vector<double> naive(const std::vector<float>& q, const std::vector<float>& ctx_k, const std::vector<float>& ctx_v,
                          const std::vector<float>& kb, const std::vector<float>& vb, int64_t pos0, int64_t nb,
                          int64_t nh, int64_t nkvh, int64_t hd, double scale, bool causal, int64_t window) {
  std::vector<double> out(nb * nh * hd, 0.0);
  const int64_t g = nh / nkvh;
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t p = pos0 + i, kvh = h / g;
      std::vector<double> s;
      std::vector<const float*> vrow;
      for (int64_t j = 0; j < pos0 + nb; ++j) {  // key at position j: context if j < pos0
        const bool in_block = j >= pos0;
        if (in_block && causal && j > p) continue;
        if (window > 0 && !(j > p - window && j <= p)) continue;
        const float* kr = in_block ? &kb[((j - pos0) * nkvh + kvh) * hd] : &ctx_k[(j * nkvh + kvh) * hd];
        vrow.push_back(in_block ? &vb[((j - pos0) * nkvh + kvh) * hd] : &ctx_v[(j * nkvh + kvh) * hd]);
        double d = 0;
        for (int64_t e = 0; e < hd; ++e) d += static_cast<double>(q[(i * nh + h) * hd + e]) * kr[e];
        s.push_back(d * scale);
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double x : s) sum += std::exp(x - mx);
      for (size_t t = 0; t < s.size(); ++t)
        for (int64_t e = 0; e < hd; ++e) out[(i * nh + h) * hd + e] += std::exp(s[t] - mx) / sum * vrow[t][e];
    }
  return out;
}

struct Case {
  int64_t pos0, nb, nh, nkvh, hd, block_size;
  bool causal;
  int64_t window;
};

class DFlashAttention : public ::testing::TestWithParam<Case> {};

TEST_P(DFlashAttention, MatchesNaive) {
  const Case c = GetParam();
  const int64_t row = c.nkvh * c.hd;
  const auto q = random_floats(c.nb * c.nh * c.hd, 40, 2.0f);
  const auto kb = random_floats(c.nb * row, 41, 2.0f);
  const auto vb = random_floats(c.nb * row, 42);
  const auto ctx_k = random_floats(std::max<int64_t>(c.pos0, 1) * row, 43, 2.0f);
  const auto ctx_v = random_floats(std::max<int64_t>(c.pos0, 1) * row, 44);

  // A pool twice as large as needed, blocks handed out in shuffled order, and
  // every slot poisoned with NaN except the context's: a read of anything
  // but the request's own context shows up as NaN in the output.
  const int64_t blocks_needed = (c.pos0 + c.block_size - 1) / c.block_size + 1;
  const int64_t n_blocks = 2 * blocks_needed;
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(7));
  table.resize(static_cast<size_t>(blocks_needed));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> k_pool(n_blocks * c.block_size * row, nan), v_pool(n_blocks * c.block_size * row, nan);
  for (int64_t p = 0; p < c.pos0; ++p) {
    const int64_t slot = table[p / c.block_size] * c.block_size + p % c.block_size;
    std::copy_n(&ctx_k[p * row], row, &k_pool[slot * row]);
    std::copy_n(&ctx_v[p * row], row, &v_pool[slot * row]);
  }

  std::vector<float> out(c.nb * c.nh * c.hd, 99.0f);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.hd));
  cpu::dflash_attention(q.data(), kb.data(), vb.data(), k_pool.data(), v_pool.data(), table.data(), c.block_size,
                        c.pos0, out.data(), c.nb, c.nh, c.nkvh, c.hd, static_cast<float>(scale), c.causal, c.window);
  const auto want = naive(q, ctx_k, ctx_v, kb, vb, c.pos0, c.nb, c.nh, c.nkvh, c.hd, scale, c.causal, c.window);
  EXPECT_LT(max_rel_error(out, want), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, DFlashAttention,
    ::testing::Values(Case{37, 16, 4, 2, 16, 8, false, 0},   // full layer: bidirectional block, all context
                      Case{37, 16, 4, 2, 16, 8, true, 0},    // full layer of a causal drafter
                      Case{37, 16, 4, 2, 16, 8, true, 8},    // sliding: window shorter than the block
                      Case{100, 16, 6, 3, 8, 16, true, 24},  // sliding: window reaches into context
                      Case{20, 16, 4, 2, 16, 4, true, 64},   // window covers everything
                      Case{5, 8, 4, 4, 8, 4, true, 1},       // window 1: each query sees only itself
                      Case{0, 16, 4, 1, 16, 16, false, 0},   // no context yet
                      Case{0, 4, 4, 2, 8, 16, true, 3},      // no context, sliding
                      Case{300, 2, 2, 2, 32, 16, false, 0}   // long context, short block
                      ));

// A sliding layer whose window covers the whole context and block sees the
// same keys as a causal full layer, so the two agree exactly.
TEST(DFlashAttention, WideWindowEqualsCausalFull) {
  const int64_t pos0 = 30, nb = 8, nh = 4, nkvh = 2, hd = 8, bs = 8, row = nkvh * hd;
  const auto q = random_floats(nb * nh * hd, 50), kb = random_floats(nb * row, 51), vb = random_floats(nb * row, 52);
  const auto kp = random_floats(8 * bs * row, 53), vp = random_floats(8 * bs * row, 54);
  const std::vector<int32_t> table = {3, 1, 6, 0, 2};
  std::vector<float> a(nb * nh * hd), b(nb * nh * hd);
  cpu::dflash_attention(q.data(), kb.data(), vb.data(), kp.data(), vp.data(), table.data(), bs, pos0, a.data(), nb, nh,
                        nkvh, hd, 0.3f, true, pos0 + nb);
  cpu::dflash_attention(q.data(), kb.data(), vb.data(), kp.data(), vp.data(), table.data(), bs, pos0, b.data(), nb, nh,
                        nkvh, hd, 0.3f, true, 0);
  EXPECT_EQ(a, b);
  // One position less and the first query loses its oldest key.
  cpu::dflash_attention(q.data(), kb.data(), vb.data(), kp.data(), vp.data(), table.data(), bs, pos0, b.data(), nb, nh,
                        nkvh, hd, 0.3f, true, pos0);
  EXPECT_NE(a, b);
}

TEST(DFlashAttention, RejectsHeadsThatDoNotGroup) {
  std::vector<float> x(64);
  const int32_t table[] = {0};
  EXPECT_THROW(cpu::dflash_attention(x.data(), x.data(), x.data(), x.data(), x.data(), table, 4, 0, x.data(), 1, 3, 2,
                                     4, 1.0f, false, 0),
               Error);
}

}  // namespace
}  // namespace flashdraft::ops
