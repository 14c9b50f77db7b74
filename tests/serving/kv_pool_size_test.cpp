#include "serving/kv_pool_size.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace flashdraft::serving {
namespace {

KvPoolDemand demand(int64_t seqs, int64_t positions) {
  KvPoolDemand d;
  d.max_num_seqs = seqs;
  d.positions_per_seq = positions;
  d.max_model_len = 2048;
  d.draft_block = 16;
  d.kv_block_size = 16;
  d.bytes_per_block = 1000;
  return d;
}

TEST(KvPoolSize, RoomForEverySequenceAtItsLongestPlusADraftBlock) {
  // 100 positions + a 16-row draft block = 116 -> 8 blocks of 16 each.
  KvPoolSize s = size_kv_pool(demand(3, 100));
  EXPECT_EQ(s.blocks_per_seq, 8);
  EXPECT_EQ(s.num_blocks, 24);
  EXPECT_FALSE(s.capped());
  // Without a drafter one row past the last token: 100 + 1 -> 7 blocks.
  KvPoolDemand plain = demand(1, 100);
  plain.draft_block = 1;
  EXPECT_EQ(size_kv_pool(plain).num_blocks, 7);
}

TEST(KvPoolSize, ASequenceNeverOutgrowsMaxModelLen) {
  EXPECT_EQ(size_kv_pool(demand(2, 5000)).blocks_per_seq, (2048 + 16) / 16);
  // 0: a server, which does not know its prompts, sizes for max_model_len.
  EXPECT_EQ(size_kv_pool(demand(2, 0)).blocks_per_seq, (2048 + 16) / 16);
  EXPECT_EQ(size_kv_pool(demand(2, 0)).num_blocks, 2 * ((2048 + 16) / 16));
}

TEST(KvPoolSize, ABudgetThatHoldsEverythingChangesNothing) {
  KvPoolDemand d = demand(4, 100);
  d.budget_bytes = 32 * 1000;
  KvPoolSize s = size_kv_pool(d);
  EXPECT_EQ(s.num_blocks, 32);
  EXPECT_FALSE(s.capped());
}

TEST(KvPoolSize, ASmallerBudgetCapsThePool) {
  KvPoolDemand d = demand(4, 100);  // wants 4 x 8 blocks
  d.budget_bytes = 20 * 1000 + 999;
  KvPoolSize s = size_kv_pool(d);
  EXPECT_EQ(s.num_blocks, 20);
  EXPECT_EQ(s.wanted_blocks, 32);
  EXPECT_TRUE(s.capped());
  EXPECT_EQ(s.bytes(d.bytes_per_block), 20 * 1000);
}

TEST(KvPoolSize, ABudgetBelowOneSequenceIsAUsageErrorSayingWhatToLower) {
  KvPoolDemand d = demand(4, 100);
  d.budget_bytes = 7 * 1000 + 999;  // one sequence needs 8 blocks
  d.gpu_memory_utilization = 0.5;
  try {
    size_kv_pool(d);
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("116 positions"), std::string::npos) << m;
    EXPECT_NE(m.find("--gpu-memory-utilization 0.5"), std::string::npos) << m;
    EXPECT_NE(m.find("--max-model-len"), std::string::npos) << m;
  }
  d.budget_bytes = 8 * 1000;
  EXPECT_EQ(size_kv_pool(d).num_blocks, 8);
}

}  // namespace
}  // namespace flashdraft::serving
