// The in-process thread group: all_reduce_sum adds in rank order (rank 0
// first) on every rank, so every rank gets the same bits, run after run;
// min over u64 keys, all_gather, and a failing rank not leaving the others
// waiting.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "parallel/communicator.h"
#include "parallel/rank_threads.h"

namespace flashdraft::parallel {
namespace {

struct Group {
  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<std::unique_ptr<ops::Backend>> backends;
  std::unique_ptr<RankThreads> threads;
  explicit Group(int size) : comms(make_group("cpu", size)) {
    std::vector<Communicator*> raw;
    for (auto& c : comms) {
      raw.push_back(c.get());
      backends.push_back(ops::make_cpu_backend());
    }
    threads = std::make_unique<RankThreads>(raw);
  }
};

// Values whose f32 sum depends on the order of the additions.
std::vector<std::vector<float>> order_sensitive(int ranks, size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> small(-1.0f, 1.0f);
  std::vector<std::vector<float>> v(static_cast<size_t>(ranks), std::vector<float>(n));
  for (size_t i = 0; i < n; ++i)
    for (int r = 0; r < ranks; ++r) v[static_cast<size_t>(r)][i] = (r % 2 == 0 ? 1e7f : -1e7f) * (r == 0) + small(gen);
  return v;
}

class ThreadGroup : public ::testing::TestWithParam<int> {};

TEST_P(ThreadGroup, AllReduceSumIsTheRankOrderSumOnEveryRankEveryTime) {
  const int size = GetParam();
  Group g(size);
  const size_t n = 1000;
  const auto in = order_sensitive(size, n, 7);
  std::vector<float> want(n);
  for (size_t i = 0; i < n; ++i) {
    float s = in[0][i];
    for (int r = 1; r < size; ++r) s += in[static_cast<size_t>(r)][i];
    want[i] = s;
  }
  // Sanity: the data do tell orders apart (else the test could not fail);
  // two addends commute in IEEE arithmetic, so only from 3 ranks on.
  int order_matters = size < 3;
  for (size_t i = 0; i < n; ++i) {
    float rev = in[static_cast<size_t>(size - 1)][i];
    for (int r = size - 2; r >= 0; --r) rev += in[static_cast<size_t>(r)][i];
    order_matters += rev != want[i];
  }
  ASSERT_GT(order_matters, 0);

  for (int rep = 0; rep < 20; ++rep) {
    std::vector<std::vector<float>> out(static_cast<size_t>(size));
    g.threads->run([&](int r) {
      auto& be = *g.backends[static_cast<size_t>(r)];
      auto t = be.alloc_tensor(ops::DType::F32, 10, static_cast<int64_t>(n / 10));
      be.upload(t.t, in[static_cast<size_t>(r)].data(), ops::DType::F32);
      g.comms[static_cast<size_t>(r)]->all_reduce_sum(be, t.t);
      out[static_cast<size_t>(r)].resize(n);
      be.download(t.t, out[static_cast<size_t>(r)].data());
    });
    for (int r = 0; r < size; ++r)
      ASSERT_EQ(std::memcmp(out[static_cast<size_t>(r)].data(), want.data(), n * sizeof(float)), 0)
          << "rank " << r << ", repetition " << rep;
  }
}

TEST_P(ThreadGroup, MinU64AndAllGather) {
  const int size = GetParam();
  Group g(size);
  std::vector<std::vector<int32_t>> mins(static_cast<size_t>(size)), gathered(static_cast<size_t>(size));
  g.threads->run([&](int r) {
    auto& be = *g.backends[static_cast<size_t>(r)];
    auto& comm = *g.comms[static_cast<size_t>(r)];
    // Row 0: rank size-1 has the smallest high word; row 1: equal high words, rank 1's low word smallest.
    const std::vector<int32_t> keys{100 + r, 50 - r, r == 1 ? 3 : 9 + r, 7};
    auto k = be.alloc_tensor(ops::DType::I32, 2, 2);
    be.upload(k.t, keys.data(), ops::DType::I32);
    comm.all_reduce_min_u64(be, k.t);
    mins[static_cast<size_t>(r)].resize(4);
    be.download_i32(k.t, mins[static_cast<size_t>(r)].data());

    const std::vector<float> local{static_cast<float>(r), static_cast<float>(10 * r)};
    auto l = be.alloc_tensor(ops::DType::F32, 1, 2);
    be.upload(l.t, local.data(), ops::DType::F32);
    auto all = be.alloc_tensor(ops::DType::F32, size, 2);
    comm.all_gather(be, l.t, all.t);
    std::vector<float> got(static_cast<size_t>(2 * size));
    be.download(all.t, got.data());
    for (float f : got) gathered[static_cast<size_t>(r)].push_back(static_cast<int32_t>(f));
  });
  std::vector<int32_t> want_gather;
  for (int r = 0; r < size; ++r) {
    want_gather.push_back(r);
    want_gather.push_back(10 * r);
  }
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(mins[static_cast<size_t>(r)], (std::vector<int32_t>{100 + size - 1, 50 - (size - 1), 3, 7}));
    EXPECT_EQ(gathered[static_cast<size_t>(r)], want_gather);
  }
}

TEST_P(ThreadGroup, AFailingRankDoesNotLeaveTheOthersWaitingAndTheGroupRecovers) {
  const int size = GetParam();
  Group g(size);
  const auto step = [&](int failing) {
    g.threads->run([&](int r) {
      if (r == failing) throw Error("rank " + std::to_string(r) + " failed");
      auto& be = *g.backends[static_cast<size_t>(r)];
      auto t = be.alloc_tensor(ops::DType::F32, 1, 4);
      be.upload(t.t, std::vector<float>(4, 1.0f).data(), ops::DType::F32);
      g.comms[static_cast<size_t>(r)]->all_reduce_sum(be, t.t);
    });
  };
  try {
    step(size - 1);
    FAIL() << "expected the failing rank's error";
  } catch (const Error& e) {
    // Rank 0's own error comes first; here rank 0 only saw the abort.
    EXPECT_NE(std::string(e.what()).find("failed"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(step(-1));  // the next call works again
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThreadGroup, ::testing::Values(2, 4), [](const auto& info) {
  return std::to_string(info.param) + "ranks";
});

TEST(MakeGroup, NamesWhatItCannotDo) {
  EXPECT_THROW(make_group("cpu", 0), Error);
  EXPECT_THROW(make_group("tpu", 2), Error);
}

}  // namespace
}  // namespace flashdraft::parallel
