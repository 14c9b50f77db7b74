#include "engine/block_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

std::vector<int32_t> to_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

TEST(BlockManager, RejectsBadGeometry) {
  EXPECT_THROW(BlockManager(0, 16), Error);
  EXPECT_THROW(BlockManager(-3, 16), Error);
  EXPECT_THROW(BlockManager(4, 0), Error);
  EXPECT_THROW(BlockManager(int64_t{1} << 32, 16), Error);
}

TEST(BlockManager, EnsureCoversPositionsWithCeilBlocks) {
  BlockManager bm(10, 4);
  EXPECT_EQ(bm.free_blocks(), 10);
  EXPECT_EQ(bm.blocks_for(0), 0);
  EXPECT_EQ(bm.blocks_for(1), 1);
  EXPECT_EQ(bm.blocks_for(4), 1);
  EXPECT_EQ(bm.blocks_for(5), 2);

  ASSERT_TRUE(bm.ensure(7, 5));
  EXPECT_EQ(bm.table(7).size(), 2u);
  EXPECT_EQ(bm.capacity(7), 8);
  EXPECT_EQ(bm.free_blocks(), 8);

  // Growing within the covered range takes nothing; growing past it only the difference.
  ASSERT_TRUE(bm.ensure(7, 8));
  EXPECT_EQ(bm.free_blocks(), 8);
  ASSERT_TRUE(bm.ensure(7, 9));
  EXPECT_EQ(bm.table(7).size(), 3u);
  EXPECT_EQ(bm.free_blocks(), 7);
  // Never shrinks, and the existing prefix of the table is kept as it was.
  const auto before = to_vector(bm.table(7));
  ASSERT_TRUE(bm.ensure(7, 1));
  EXPECT_EQ(to_vector(bm.table(7)), before);
  ASSERT_TRUE(bm.ensure(7, 13));
  EXPECT_EQ(std::vector<int32_t>(bm.table(7).begin(), bm.table(7).begin() + 3), before);
}

TEST(BlockManager, TablesOfDifferentRequestsNeverShareABlock) {
  BlockManager bm(12, 2);
  ASSERT_TRUE(bm.ensure(1, 5));   // 3 blocks
  ASSERT_TRUE(bm.ensure(2, 2));   // 1
  ASSERT_TRUE(bm.ensure(1, 8));   // +1
  ASSERT_TRUE(bm.ensure(3, 12));  // 6
  std::set<int32_t> seen;
  size_t total = 0;
  for (RequestId id : {1, 2, 3}) {
    for (int32_t b : bm.table(id)) {
      EXPECT_GE(b, 0);
      EXPECT_LT(b, 12);
      seen.insert(b);
      ++total;
    }
  }
  EXPECT_EQ(total, 11u);
  EXPECT_EQ(seen.size(), total);
  EXPECT_EQ(bm.free_blocks(), 1);
}

TEST(BlockManager, ExhaustionIsAllOrNothing) {
  BlockManager bm(5, 4);
  ASSERT_TRUE(bm.ensure(1, 12));  // 3 blocks
  const auto table1 = to_vector(bm.table(1));
  EXPECT_TRUE(bm.can_allocate(2));
  EXPECT_FALSE(bm.can_allocate(3));

  // Request 2 wants 3 blocks, only 2 free: nothing is taken.
  EXPECT_FALSE(bm.ensure(2, 9));
  EXPECT_TRUE(bm.table(2).empty());
  EXPECT_EQ(bm.free_blocks(), 2);
  // Request 1 growing by 3 blocks fails the same way and keeps its table.
  EXPECT_FALSE(bm.ensure(1, 24));
  EXPECT_EQ(to_vector(bm.table(1)), table1);
  EXPECT_EQ(bm.free_blocks(), 2);

  // Exactly what is left still fits.
  EXPECT_TRUE(bm.ensure(2, 8));
  EXPECT_EQ(bm.free_blocks(), 0);
  EXPECT_FALSE(bm.ensure(3, 1));
  EXPECT_FALSE(bm.can_allocate(1));
  EXPECT_TRUE(bm.ensure(3, 0));  // nothing asked, nothing needed
}

TEST(BlockManager, FreedBlocksAreReused) {
  BlockManager bm(4, 8);
  ASSERT_TRUE(bm.ensure(1, 16));
  ASSERT_TRUE(bm.ensure(2, 16));
  EXPECT_FALSE(bm.ensure(3, 1));
  auto freed = to_vector(bm.table(1));
  bm.free(1);
  EXPECT_TRUE(bm.table(1).empty());
  EXPECT_EQ(bm.free_blocks(), 2);
  ASSERT_TRUE(bm.ensure(3, 16));
  auto got = to_vector(bm.table(3));
  std::sort(freed.begin(), freed.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, freed);
  // Freeing twice, or a request that holds nothing, changes nothing.
  bm.free(1);
  bm.free(42);
  EXPECT_EQ(bm.free_blocks(), 0);
}

TEST(BlockManager, ManyCyclesNeitherLeakNorDuplicate) {
  BlockManager bm(16, 3);
  std::vector<int64_t> len(6, 0);
  uint32_t x = 12345;
  for (int it = 0; it < 2000; ++it) {
    x = x * 1664525u + 1013904223u;
    const RequestId id = (x >> 8) % 6;
    if ((x >> 20) % 4 == 0) {
      bm.free(id);
      len[static_cast<size_t>(id)] = 0;
    } else {
      const int64_t want = len[static_cast<size_t>(id)] + static_cast<int64_t>((x >> 12) % 7);
      if (bm.ensure(id, want)) len[static_cast<size_t>(id)] = std::max(len[static_cast<size_t>(id)], want);
    }
    std::set<int32_t> held;
    int64_t n = 0;
    for (RequestId r = 0; r < 6; ++r) {
      ASSERT_GE(bm.capacity(r), len[static_cast<size_t>(r)]);
      ASSERT_EQ(static_cast<int64_t>(bm.table(r).size()), bm.blocks_for(len[static_cast<size_t>(r)]));
      for (int32_t b : bm.table(r)) held.insert(b), ++n;
    }
    ASSERT_EQ(static_cast<int64_t>(held.size()), n);
    ASSERT_EQ(n + bm.free_blocks(), 16);
  }
}

}  // namespace
}  // namespace flashdraft::engine
