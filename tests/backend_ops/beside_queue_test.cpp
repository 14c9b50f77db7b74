// Backend::begin_beside / end_beside / join_beside on every backend: work
// queued beside the main queue has landed by the join, eagerly and inside a
// recorded graph (where the CUDA backend's second stream becomes a branch),
// and what the main queue does meanwhile is its own. On the CPU the three
// are no-ops (one queue, in order); on CUDA a missing or misplaced wait
// would let the copy after the join read what the side copy has not yet
// written, which NaN-filled buffers and a copy of 256 MB make visible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "backend_named.h"
#include "ops/backend.h"

namespace flashdraft::ops {
namespace {

using testing::backend_named;

class BesideQueue : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    be_ = backend_named(GetParam());
    if (!be_) GTEST_SKIP() << "no CUDA device on this machine (or a build without CUDA)";
    // Long enough on a GPU that a copy racing it would see NaN.
    rows_ = be_->device() == Device::CPU ? 256 : 16384;
  }
  OwnedTensor make() { return be_->alloc_tensor(DType::F32, rows_, kCols); }
  std::vector<float> download(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    be_->download(t, v.data());
    return v;
  }
  static constexpr int64_t kCols = 4096;
  std::shared_ptr<Backend> be_;
  int64_t rows_ = 0;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_P(BesideQueue, SideWorkHasLandedByTheJoin) {
  auto a = make(), b = make(), c = make(), d = make();
  be_->fill_uniform(a.t, 7, -1.f, 1.f);
  be_->fill_nan(b.t);
  be_->fill_nan(d.t);
  be_->begin_beside();
  be_->copy(a.t, b.t);
  be_->end_beside();
  be_->fill_uniform(c.t, 8, -1.f, 1.f);  // the main queue's own work meanwhile
  be_->join_beside();
  be_->copy(b.t, d.t);
  be_->synchronize();
  const auto want = download(a.t);
  EXPECT_TRUE(same_bits(download(d.t), want)) << "the copy after the join read the side copy's target too early";
  EXPECT_FALSE(std::isnan(download(c.t)[0]));
}

TEST_P(BesideQueue, ABranchInARecordedGraph) {
  auto a = make(), b = make(), d = make();
  be_->fill_nan(b.t);
  be_->fill_nan(d.t);
  be_->synchronize();
  auto graph = be_->capture([&] {
    be_->begin_beside();
    be_->copy(a.t, b.t);
    be_->end_beside();
    be_->join_beside();
    be_->copy(b.t, d.t);
  });
  if (!graph) GTEST_SKIP() << "no graphs on this backend";
  for (uint64_t seed : {11u, 12u}) {
    be_->fill_uniform(a.t, seed, -1.f, 1.f);
    graph->replay();
    be_->synchronize();
    EXPECT_TRUE(same_bits(download(d.t), download(a.t))) << "replay with seed " << seed;
  }
}

TEST_P(BesideQueue, OneRegionAtATime) {
  if (be_->device() == Device::CPU) GTEST_SKIP() << "one queue: nothing to nest";
  be_->begin_beside();
  EXPECT_THROW(be_->begin_beside(), Error);
  be_->end_beside();
  be_->join_beside();
  be_->synchronize();
}

INSTANTIATE_TEST_SUITE_P(Backends, BesideQueue, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace flashdraft::ops
