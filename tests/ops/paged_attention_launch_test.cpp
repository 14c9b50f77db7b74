// The CUDA paged attention's launch rules (ops/cuda/paged_attention.h,
// plan_paged_attention): host arithmetic only, so these run without a GPU.
// Layouts and key groups change no bits (the GPU harness checks that); what
// they decide is how a call's work spreads over the multiprocessors, and
// these tests pin the properties the kernel relies on and the choices the
// README's measurements are about.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ops/cuda/attention_splits.h"
#include "ops/cuda/paged_attention.h"

namespace fo = flashdraft::ops;
namespace fc = flashdraft::ops::cuda;

namespace {

constexpr int kSms = 132;  // H100 / H200
constexpr int64_t kHeads = 32, kKvHeads = 8;

// n_seqs sequences of `rows` query rows each, the longest reaching `keys`.
fo::AttnBatch batch_of(int n_seqs, int rows, int keys) {
  fo::AttnBatch b;
  b.n_seqs = n_seqs;
  b.n_rows = n_seqs * rows;
  b.max_rows = rows;
  b.max_keys = keys;
  b.block_size = 16;
  return b;
}

fc::PagedAttentionPlan plan(int n_seqs, int rows, int keys, fo::AttentionMask mask = {true, 0}) {
  return fc::plan_paged_attention(batch_of(n_seqs, rows, keys), mask, kHeads, kKvHeads, kSms);
}

std::string layout(const fc::PagedAttentionPlan& p) {
  return std::to_string(p.rows_per_cta / 16) + "x" + std::to_string(p.warps_k) + "@" + std::to_string(p.ctas_per_sm);
}

TEST(PagedAttentionLaunch, LayoutsByQueryRows) {
  EXPECT_EQ(layout(plan(1, 1, 8192)), "1x4@2");       // decode: 4 GQA entries in one 16-entry tile
  EXPECT_EQ(layout(plan(32, 1, 8192)), "1x4@2");
  EXPECT_EQ(layout(plan(1, 2048, 2048)), "8x1@1");    // prefill: 128 entries a CTA
  EXPECT_EQ(layout(plan(1, 16, 1040)), "4x2@1");      // a 16-row block at batch 1, short keys
  EXPECT_EQ(layout(plan(8, 16, 1040)), "1x4@2");      // whose 16-entry tiles fill the GPU in one wave
  EXPECT_EQ(layout(plan(4, 16, 8208)), "4x1@2");      // two sequences and up past 2048 keys
}

// Batch-1 blocks past 2048 keys: 4 x 1 at one CTA a multiprocessor, unless
// two take 4 tiles or more off the critical path (README, GPU figures).
TEST(PagedAttentionLaunch, BatchOneBlocksPastTwoThousandKeys) {
  const fc::PagedAttentionPlan exact = plan(1, 16, 8208);  // bench_cycle's 8192 + 16
  EXPECT_EQ(layout(exact), "4x1@1");
  EXPECT_EQ(exact.splits, 17);
  EXPECT_EQ(exact.chunk_keys, 512);
  const fc::PagedAttentionPlan bucket = plan(1, 16, 16384);  // a recorded step's bucket
  EXPECT_EQ(layout(bucket), "4x1@2");
  EXPECT_EQ(bucket.splits, 32);
  EXPECT_EQ(bucket.chunk_keys, 512);
  EXPECT_EQ(layout(plan(1, 16, 4112)), "4x1@1");
  EXPECT_EQ(layout(plan(1, 16, 8400)), "4x1@2");  // one a multiprocessor: a 12-tile last group
}

TEST(PagedAttentionLaunch, ForcedLayoutIsHonoured) {
  fc::set_paged_attention_forced_layout(4, 2);
  const fc::PagedAttentionPlan p = plan(1, 16, 16384);
  fc::set_paged_attention_forced_layout(0, 0);
  EXPECT_EQ(layout(p), "4x2@1");
  EXPECT_EQ(p.chunk_keys, 1024);  // 16 groups at most, one CTA a multiprocessor
  EXPECT_THROW(fc::set_paged_attention_forced_layout(3, 3), std::exception);
}

// Over batches, query lengths, key counts and windows: every planned key
// group holds keys, groups are whole splits of the first split's length
// times a power of two, M is covered by the M tiles, and the grid fits the
// CTAs the multiprocessors hold plus at most one partial group.
TEST(PagedAttentionLaunch, GroupingPropertiesHoldEverywhere) {
  int checked = 0;
  for (int n_seqs : {1, 2, 3, 4, 8, 16, 33, 64})
    for (int rows : {1, 2, 16, 200})
      for (int keys : {1, 100, 1024, 1040, 2064, 4112, 8208, 8700, 12000, 16384, 16400, 32768, 40960})
        for (int64_t window : {int64_t{0}, int64_t{2048}})
          for (bool causal : {true, false}) {
            if (keys < rows) continue;
            const fc::PagedAttentionPlan p = plan(n_seqs, rows, keys, {causal, window});
            const std::string at = std::to_string(n_seqs) + " seqs x " + std::to_string(rows) + " rows, " +
                                   std::to_string(keys) + " keys, window " + std::to_string(window) +
                                   (causal ? " causal" : " bidirectional") + ": " + layout(p);
            const int warps = p.rows_per_cta / 16 * p.warps_k;
            ASSERT_TRUE(p.ctas_per_sm == 1 || (p.ctas_per_sm == 2 && warps == 4)) << at;
            const int64_t m = int64_t{rows} * (kHeads / kKvHeads);
            ASSERT_GE(int64_t{p.m_tiles} * p.rows_per_cta, m) << at;
            ASSERT_LT(int64_t{p.m_tiles - 1} * p.rows_per_cta, m) << at;
            const int64_t units = int64_t{n_seqs} * kKvHeads * p.m_tiles;
            ASSERT_EQ(p.ctas, units * p.splits) << at;
            ASSERT_GE(p.splits, 1) << at;
            if (p.splits > 1) {
              ASSERT_EQ(p.chunk_keys % p.split_keys, 0) << at;
              const int ratio = p.chunk_keys / p.split_keys;
              ASSERT_EQ(ratio & (ratio - 1), 0) << at;  // a power of two
              // No planned group is empty: the groups cover the keys, or
              // under a window its rows' reach, up to one longest split
              // (1024 keys) before it.
              const bool windowed = window > 0 && window < keys;
              ASSERT_LT(int64_t{p.splits - 1} * p.chunk_keys, keys + (windowed ? 1024 : 0)) << at;
              ASSERT_LE(p.ctas, int64_t{kSms} * p.ctas_per_sm + units) << at;
            }
            ++checked;
          }
  EXPECT_GT(checked, 1000);
}

// The split positions (attention_splits.h) by which the kernel and the split
// reduce find a key's split and a row's partial slots: splits tile the keys
// without gaps or overlaps, each a whole number of tiles, `of` and `begin`
// agree, and the tiers end where the kernel's comment says.
TEST(AttentionSplits, SplitsTileTheKeys) {
  const fc::SplitTiers tiers;
  for (int s = 0; s < 100; ++s) {
    const int a = tiers.begin(s), b = tiers.begin(s + 1);
    ASSERT_GT(b, a) << "split " << s;
    ASSERT_EQ((b - a) % fc::kAttnTileKeys, 0) << "split " << s;
    ASSERT_EQ(tiers.of(a), s) << "split " << s;
    ASSERT_EQ(tiers.of(b - 1), s) << "split " << s;
  }
  EXPECT_EQ(tiers.begin(0), 0);
  EXPECT_EQ(tiers.begin(8), 1024);    // 8 of 128 keys
  EXPECT_EQ(tiers.begin(20), 4096);   // then 12 of 256
  EXPECT_EQ(tiers.begin(44), 16384);  // then 24 of 512, then 1024 each
  EXPECT_EQ(tiers.begin(45) - tiers.begin(44), 1024);
  EXPECT_EQ(tiers.of(32767) + 1, 60);  // a 32k-key row's partial slots (the reduce's scan path)
  const fc::SplitTiers uniform = fc::uniform_tiers(192);
  for (int k = 0; k < 5000; k += 7) ASSERT_EQ(uniform.of(k), k / 192) << "key " << k;
  EXPECT_EQ(uniform.begin(10), 1920);
}

// A CTA group is the shortest power-of-two multiple of the first split that
// leaves at most `most` groups (capped), on the host and in the kernel alike;
// fit_group_keys allows the second bound only past 8 tiles a group.
TEST(AttentionSplits, GroupKeysAreTheShortestFit) {
  for (int range : {1, 64, 100, 1024, 1040, 8208, 16384, 32768, 100000})
    for (int most : {0, 1, 2, 8, 16, 33, 264}) {
      const int keys = fc::group_keys_for(range, most, 128, 1 << 30);
      const std::string at = std::to_string(range) + " keys, at most " + std::to_string(most);
      ASSERT_EQ(keys % 128, 0) << at;
      ASSERT_EQ((keys / 128) & (keys / 128 - 1), 0) << at;  // a power of two
      ASSERT_LE(range / keys, std::max(most, 1)) << at;
      if (keys > 128) {
        ASSERT_GT(range / (keys / 2), std::max(most, 1)) << at;  // none shorter fits
      }
      ASSERT_EQ(fc::group_keys_for(range, most, 128, 512), std::min(keys, 512)) << at;  // the cap
    }
  const int both[2] = {16, 33};
  EXPECT_EQ(fc::fit_group_keys(8192, both, 128, 1 << 30), 512);     // 16 groups of 8 tiles: the first bound
  EXPECT_EQ(fc::fit_group_keys(32768, both, 128, 1 << 30), 1024);   // 2048 would be 32 tiles: the second
}

}  // namespace
