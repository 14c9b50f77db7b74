// The sharded argmax (model/tensor_parallel.h): each rank's
// Backend::argmax_key over its slice of the vocabulary, the smallest key
// over the ranks, is the whole row's argmax with its tie rule (the lowest
// index), for ties inside a shard, across shards and at their edges.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ops/argmax_key.h"
#include "ops/ops.h"
#include "parallel/communicator.h"
#include "parallel/rank_threads.h"

namespace flashdraft::parallel {
namespace {

std::vector<int32_t> sharded_argmax(const std::vector<float>& logits, int64_t rows, int64_t vocab, int size) {
  auto comms = make_group("cpu", size);
  std::vector<Communicator*> raw;
  for (auto& c : comms) raw.push_back(c.get());
  RankThreads threads(raw);
  std::vector<int32_t> out(static_cast<size_t>(rows));
  threads.run([&](int r) {
    auto be = ops::make_cpu_backend();
    const int64_t shard = vocab / size, begin = r * shard;
    auto x = be->alloc_tensor(ops::DType::F32, rows, shard);
    std::vector<float> part;
    for (int64_t i = 0; i < rows; ++i)
      part.insert(part.end(), logits.begin() + i * vocab + begin, logits.begin() + i * vocab + begin + shard);
    be->upload(x.t, part.data(), ops::DType::F32);
    auto keys = be->alloc_tensor(ops::DType::I32, rows, 2);
    be->argmax_key(x.t, begin, keys.t);
    comms[static_cast<size_t>(r)]->all_reduce_min_u64(*be, keys.t);
    std::vector<int32_t> k(static_cast<size_t>(2 * rows));
    be->download_i32(keys.t, k.data());
    if (r == 0)
      for (int64_t i = 0; i < rows; ++i) out[static_cast<size_t>(i)] = k[static_cast<size_t>(2 * i)];
  });
  return out;
}

TEST(ShardedArgmax, EqualsTheWholeRowsArgmaxTiesToTheLowestIndex) {
  const int64_t vocab = 64;
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-5.0f, 5.0f);
  std::vector<std::vector<float>> rows;
  const auto row_with = [&](std::vector<int64_t> at, float top) {
    std::vector<float> r(static_cast<size_t>(vocab));
    for (float& v : r) v = u(gen);
    for (int64_t a : at) r[static_cast<size_t>(a)] = top;
    rows.push_back(r);
  };
  row_with({37}, 9.0f);               // a clear winner
  row_with({5, 9}, 9.0f);             // a tie inside shard 0
  row_with({50, 20}, 9.0f);           // a tie across shards: 20 wins
  row_with({15, 16}, 9.0f);           // at the 2- and 4-rank edge 16 (4 ranks: 15 | 16)
  row_with({31, 32, 63}, 9.0f);       // the 2-rank edge, and the last column
  row_with({48, 63}, -0.5f);          // a negative maximum... once the rest is lower:
  for (float& v : rows.back()) v = std::min(v, -0.5f) - (v == -0.5f ? 0.0f : 1.0f);
  row_with({}, 0.0f);                 // every value the same: index 0
  for (float& v : rows.back()) v = -std::numeric_limits<float>::infinity();
  row_with({0}, 1.0f);                // the winner at index 0
  row_with({}, 0.0f);                 // +0 and -0 are equal: the lower index
  for (float& v : rows.back()) v = -1.0f;
  rows.back()[40] = 0.0f;
  rows.back()[12] = -0.0f;

  std::vector<float> flat;
  std::vector<int32_t> want;
  for (const auto& r : rows) {
    flat.insert(flat.end(), r.begin(), r.end());
    want.push_back(static_cast<int32_t>(ops::cpu::argmax(r.data(), vocab)));
  }
  ASSERT_EQ(want[2], 20);
  ASSERT_EQ(want[4], 31);
  ASSERT_EQ(want.back(), 12);  // -0 at 12 ties +0 at 40
  for (int size : {2, 4}) EXPECT_EQ(sharded_argmax(flat, static_cast<int64_t>(rows.size()), vocab, size), want) << size;
}

TEST(ShardedArgmax, KeyOrderFollowsTheValues) {
  const std::vector<float> ascending{-std::numeric_limits<float>::infinity(), -1e30f, -2.0f, -1e-30f, 0.0f,
                                     1e-30f, 3.0f, 1e30f, std::numeric_limits<float>::infinity()};
  for (size_t i = 1; i < ascending.size(); ++i)
    EXPECT_LT(ops::argmax_key::high_word(ascending[i]), ops::argmax_key::high_word(ascending[i - 1])) << i;
  EXPECT_EQ(ops::argmax_key::high_word(-0.0f), ops::argmax_key::high_word(0.0f));  // equal, as the reference sees them
  EXPECT_EQ(ops::argmax_key::high_word(std::nanf("")), 0xffffffffu);  // NaN loses to every number
  EXPECT_LT(ops::argmax_key::high_word(-std::numeric_limits<float>::infinity()), 0xffffffffu);
}

}  // namespace
}  // namespace flashdraft::parallel
