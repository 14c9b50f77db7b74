// Paged attention against a naive double-precision attention per request:
// each request's K/V scattered over shuffled pool blocks, every other slot
// poisoned with NaN so that reading anything outside a request's visible
// positions shows up; every mask kind (causal, DFlash block-bidirectional,
// causal sliding window, non-causal sliding window).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"
#include "ops/ops.h"
#include "random_data.h"

namespace flashdraft::ops {
namespace {

using cpu::PagedSeq;
using testing::random_floats;

struct SeqSpec {
  int64_t pos0, n_rows;
};

struct Case {
  std::vector<SeqSpec> seqs;
  int64_t block_size, nh, nkvh, hd;
  bool causal = true;
  int64_t window = 0;
};

// One request's attention in double: q [n, nh, hd] at positions pos0.., keys
// k/v [pos0 + n, nkvh, hd] at positions 0..; the mask as in ops::AttentionMask.
std::vector<float> naive_attention(const float* q, const float* k, const float* v, int64_t n, int64_t pos0,
                                   const Case& c, float scale) {
  const int64_t keys = pos0 + n, group = c.nh / c.nkvh;
  std::vector<float> out(static_cast<size_t>(n * c.nh * c.hd));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < c.nh; ++h) {
      const int64_t p = pos0 + i, kvh = h / group;
      const auto seen = [&](int64_t j) {
        if (c.window > 0 && (j <= p - c.window || (!c.causal && j >= p + c.window))) return false;
        return !c.causal || j <= p;
      };
      std::vector<double> w(static_cast<size_t>(keys), 0.0);
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        if (!seen(j)) continue;
        double d = 0;
        for (int64_t e = 0; e < c.hd; ++e)
          d += double(q[(i * c.nh + h) * c.hd + e]) * k[(j * c.nkvh + kvh) * c.hd + e];
        w[j] = d * scale;
        mx = std::max(mx, w[j]);
      }
      for (int64_t j = 0; j < keys; ++j)
        if (seen(j)) sum += (w[j] = std::exp(w[j] - mx));
      for (int64_t e = 0; e < c.hd; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < keys; ++j)
          if (seen(j)) acc += w[j] / sum * v[(j * c.nkvh + kvh) * c.hd + e];
        out[(i * c.nh + h) * c.hd + e] = static_cast<float>(acc);
      }
    }
  return out;
}

double max_rel_diff(const float* got, const float* want, int64_t n) {
  double diff = 0, ref = 1e-30;
  for (int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    ref = std::max(ref, std::abs(static_cast<double>(want[i])));
  }
  return diff / ref;
}

class PagedAttention : public ::testing::TestWithParam<Case> {};

TEST_P(PagedAttention, MatchesNaiveAttentionPerRequest) {
  const Case c = GetParam();
  const int64_t bs = c.block_size, kv_row = c.nkvh * c.hd, q_row = c.nh * c.hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.hd));

  // Blocks each request needs, plus spares that stay poisoned, handed out in
  // a shuffled order so no table is contiguous or sorted.
  int64_t need = 0;
  for (const auto& s : c.seqs) need += (s.pos0 + s.n_rows + bs - 1) / bs;
  const int64_t num_blocks = need + 3;
  std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(7));
  std::vector<float> k_pool(num_blocks * bs * kv_row, NAN), v_pool(num_blocks * bs * kv_row, NAN);

  std::vector<std::vector<int32_t>> tables;
  std::vector<std::vector<float>> ks, vs;
  std::vector<PagedSeq> seqs;
  int64_t rows = 0;
  size_t next_block = 0;
  for (size_t r = 0; r < c.seqs.size(); ++r) {
    const auto& s = c.seqs[r];
    const int64_t len = s.pos0 + s.n_rows;
    std::vector<int32_t> table;
    for (int64_t b = 0; b < (len + bs - 1) / bs; ++b) table.push_back(ids[next_block++]);
    ks.push_back(random_floats(len * kv_row, 100 + static_cast<uint32_t>(r), 2.0f));
    vs.push_back(random_floats(len * kv_row, 200 + static_cast<uint32_t>(r)));
    for (int64_t p = 0; p < len; ++p) {
      const int64_t slot = table[p / bs] * bs + p % bs;
      std::copy_n(ks.back().data() + p * kv_row, kv_row, k_pool.data() + slot * kv_row);
      std::copy_n(vs.back().data() + p * kv_row, kv_row, v_pool.data() + slot * kv_row);
    }
    tables.push_back(std::move(table));
    seqs.push_back(PagedSeq{rows, s.n_rows, s.pos0, nullptr});
    rows += s.n_rows;
  }
  for (size_t r = 0; r < seqs.size(); ++r) seqs[r].block_table = tables[r].data();

  const auto q = random_floats(rows * q_row, 42, 2.0f);
  std::vector<float> out(rows * q_row, 99.0f);
  cpu::paged_attention(q.data(), q_row, k_pool.data(), v_pool.data(), out.data(), q_row, seqs.data(),
                       static_cast<int64_t>(seqs.size()), bs, c.nh, c.nkvh, c.hd, scale, c.causal, c.window);

  for (size_t r = 0; r < seqs.size(); ++r) {
    const auto& s = seqs[r];
    const auto want =
        naive_attention(q.data() + s.row_begin * q_row, ks[r].data(), vs[r].data(), s.n_rows, s.pos0, c, scale);
    EXPECT_LT(max_rel_diff(out.data() + s.row_begin * q_row, want.data(), s.n_rows * q_row), 1e-5)
        << "request " << r << " (pos0 " << s.pos0 << ", " << s.n_rows << " rows)";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Batches, PagedAttention,
    ::testing::Values(Case{{{0, 1}}, 4, 2, 1, 8},                             // one fresh token
                      Case{{{0, 9}}, 4, 4, 2, 16},                            // prefill ending mid-block
                      Case{{{13, 1}, {0, 7}, {5, 6}, {30, 1}}, 4, 6, 2, 64},  // decode + prefill + chunk + decode
                      Case{{{8, 16}, {3, 16}, {40, 1}}, 4, 4, 4, 8},          // verify rows of 16, MHA
                      Case{{{100, 17}, {0, 130}, {7, 3}}, 16, 8, 2, 32},      // bigger blocks, long prefill
                      Case{{{5, 3}, {0, 0}, {2, 2}}, 1, 4, 1, 12},            // block size 1, empty request, MQA
                      Case{{{11, 4}}, 3, 2, 2, 7},                            // odd head_dim and block size
                      Case{{{40, 1}, {0, 35}, {17, 16}}, 16, 8, 2, 128},      // head_dim 128 (Qwen3-8B's)
                      // DFlash drafter blocks: bidirectional inside the block, and sliding windows
                      // smaller and larger than the context, on both paths (1-3 rows direct, >= 4 GEMM).
                      Case{{{20, 16}, {3, 8}, {0, 2}, {9, 1}}, 4, 4, 2, 16, false, 0},
                      Case{{{20, 16}, {3, 8}, {0, 2}, {9, 3}}, 4, 4, 2, 16, true, 5},
                      Case{{{20, 16}, {3, 8}, {9, 3}}, 4, 4, 1, 16, true, 64},
                      Case{{{37, 16}, {70, 2}}, 16, 8, 2, 64, true, 17},
                      Case{{{37, 16}, {70, 2}}, 16, 8, 8, 128, false, 0},
                      // Non-causal sliding windows, (p - W, p + W): W below the block (later
                      // block rows cut off), W near the block, W past everything; both paths.
                      Case{{{20, 16}, {3, 8}, {0, 2}, {9, 3}}, 4, 4, 2, 16, false, 5},
                      Case{{{20, 16}, {3, 8}, {9, 3}}, 4, 4, 1, 16, false, 1},
                      Case{{{37, 16}, {70, 2}, {0, 16}}, 16, 8, 2, 64, false, 17},
                      Case{{{20, 16}, {3, 8}}, 4, 4, 2, 16, false, 64}));

TEST(PagedAttentionThreads, LeavesTheBlasThreadCountAsItFoundIt) {
  // Multi-row requests run their GEMMs single-threaded; the caller's setting must come back.
  const int before = cpu::num_threads();
  cpu::set_num_threads(2);
  std::vector<float> q(8 * 2 * 8, 0.5f), kv(8 * 8, 0.25f), out(q.size());
  const int32_t table[] = {1, 0};
  const PagedSeq s{0, 8, 0, table};
  cpu::paged_attention(q.data(), 16, kv.data(), kv.data(), out.data(), 16, &s, 1, 4, 2, 1, 8, 1.0f, true, 0);
  EXPECT_EQ(cpu::num_threads(), 2);
  EXPECT_FLOAT_EQ(out[5], 0.25f);  // uniform values: any softmax gives them back
  cpu::set_num_threads(before);
}

TEST(PagedAttentionErrors, RejectsHeadsThatDoNotGroup) {
  std::vector<float> x(64);
  const int32_t table[] = {0};
  const PagedSeq s{0, 1, 0, table};
  EXPECT_THROW(cpu::paged_attention(x.data(), 12, x.data(), x.data(), x.data(), 12, &s, 1, 4, 3, 2, 4, 1.0f, true, 0),
               Error);
  EXPECT_THROW(cpu::paged_attention(x.data(), 8, x.data(), x.data(), x.data(), 8, &s, 1, 0, 2, 2, 4, 1.0f, true, 0),
               Error);
  EXPECT_THROW(cpu::paged_attention(x.data(), 8, x.data(), x.data(), x.data(), 8, &s, 1, 4, 2, 2, 4, 1.0f, true, -1),
               Error);
}

}  // namespace
}  // namespace flashdraft::ops
