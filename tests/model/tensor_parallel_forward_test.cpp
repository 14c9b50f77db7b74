// The split forward (model/tensor_parallel.h) on thread ranks against one
// rank: logits of a batched prefill then decode of two requests, for the
// tiny Qwen3 (tied head; 2 KV heads: split over 2 ranks, each held by two
// ranks of 4) and the tiny Llama (q/k/v/o biases, untied head, 1 KV head
// held by every rank), loaded from the checkpoint and as --load-format
// dummy's random weights (the same model at every rank count). The sums
// over ranks add partial dot products in another order, so logits agree to
// f32 rounding, and the split greedy argmax equals the whole row's. Then
// how the ranks load (load_on_every_rank): at once, one progress count,
// errors that name their file and tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/qwen3_model.h"
#include "model/weight_loader.h"
#include "ops/backend_factory.h"
#include "ops/ops.h"
#include "parallel/rank_threads.h"

namespace flashdraft::model {
namespace {

struct Result {
  std::vector<float> logits;   // both steps' rows, [rows, vocab]
  std::vector<int32_t> argmax;  // Qwen3Model::argmax of each row
};

// Step 1: request 0 prefills 7 tokens, request 1 5 tokens (every row's
// logits); step 2: one decode row each. dummy: --load-format dummy's random
// weights instead of the checkpoint's.
Result run(const std::string& name, int ranks, bool dummy = false) {
  const auto dir = std::filesystem::path(FD_FIXTURES_DIR) / name;
  const auto ckpt = io::Checkpoint::open(dir);
  const auto cfg = io::load_model_config(dir);
  const io::Checkpoint* weights = dummy ? nullptr : &ckpt;
  std::unique_ptr<Qwen3Model> root =
      ranks > 1    ? Qwen3Model::load_sharded(weights, cfg, ops::make_rank_backends("cpu", ranks),
                                              parallel::make_group("cpu", ranks))
      : dummy ? Qwen3Model::load_dummy(cfg, nullptr)
              : Qwen3Model::load(ckpt, cfg);
  std::vector<Qwen3Model*> shards{root.get()};
  std::vector<parallel::Communicator*> comms{root->shard().comm};
  for (const auto& p : root->peers()) {
    shards.push_back(p.get());
    comms.push_back(p->shard().comm);
  }
  const int64_t V = cfg.vocab_size;
  const std::vector<int32_t> t0{0, 1}, t1{2, 3};
  const std::vector<int32_t> prefill{5, 17, 99, 3, 250, 8, 41, 7, 300, 2, 64, 11}, decode{77, 123};
  BatchContext step1, step2;
  step1.seqs = {SeqSlice{0, 7, 0, t0, true}, SeqSlice{7, 5, 0, t1, true}};
  step2.seqs = {SeqSlice{0, 1, 7, t0, true}, SeqSlice{1, 1, 5, t1, true}};
  Result out;
  const auto body = [&](int r) {
    Qwen3Model& m = *shards[static_cast<size_t>(r)];
    ops::Backend& be = m.backend();
    KVPool pool(be, 4, 16, m.kv_layers());
    for (const auto* step : {&step1, &step2}) {
      m.run_batch(step == &step1 ? prefill : decode, *step, pool);
      const int64_t rows = m.logits_tensor().rows;
      auto tokens = be.alloc_tensor(ops::DType::I32, rows, 1);
      m.argmax(m.logits_tensor(), tokens.t);
      m.gather_logits();
      EXPECT_EQ(m.logits_tensor().cols, V);
      if (r != 0) continue;
      std::vector<float> l(static_cast<size_t>(rows * V));
      be.download(m.logits_tensor(), l.data());
      out.logits.insert(out.logits.end(), l.begin(), l.end());
      std::vector<int32_t> a(static_cast<size_t>(rows));
      be.download_i32(tokens.t, a.data());
      out.argmax.insert(out.argmax.end(), a.begin(), a.end());
    }
  };
  if (ranks == 1) {
    body(0);
  } else {
    parallel::RankThreads threads(comms);
    threads.run(body);
  }
  return out;
}

class SplitForward : public ::testing::TestWithParam<std::tuple<const char*, int, bool>> {};

TEST_P(SplitForward, MatchesOneRank) {
  const auto [name, ranks, dummy] = GetParam();
  const Result one = run(name, 1, dummy), split = run(name, ranks, dummy);
  ASSERT_EQ(split.logits.size(), one.logits.size());
  ASSERT_EQ(one.logits.size(), 14u * static_cast<size_t>(io::load_model_config(
                                          std::filesystem::path(FD_FIXTURES_DIR) / name).vocab_size));
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < one.logits.size(); ++i) {
    ASSERT_TRUE(std::isfinite(split.logits[i])) << i;
    max_ref = std::max(max_ref, std::abs(static_cast<double>(one.logits[i])));
    max_diff = std::max(max_diff, std::abs(static_cast<double>(split.logits[i]) - one.logits[i]));
  }
  EXPECT_LT(max_diff, 1e-5 * max_ref) << "max |logit| " << max_ref;
  EXPECT_EQ(split.argmax, one.argmax);
  // The split argmax is the argmax of the gathered rows (same tie rule).
  const int64_t V = static_cast<int64_t>(split.logits.size() / split.argmax.size());
  for (size_t r = 0; r < split.argmax.size(); ++r)
    EXPECT_EQ(split.argmax[r], ops::cpu::argmax(split.logits.data() + r * V, V)) << r;
}

INSTANTIATE_TEST_SUITE_P(Tiny, SplitForward,
                         ::testing::Combine(::testing::Values("tiny-qwen3", "tiny-llama"), ::testing::Values(2, 4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n + "_" + std::to_string(std::get<1>(info.param)) + "ranks" +
                                  (std::get<2>(info.param) ? "_dummy" : "");
                         });

// The ranks load at once (load_on_every_rank): one progress count, the
// ranks' bytes summed, rising to every rank's whole checkpoint.
TEST(SplitLoad, ProgressSumsTheRanks) {
  const auto dir = std::filesystem::path(FD_FIXTURES_DIR) / "tiny-qwen3";
  const auto ckpt = io::Checkpoint::open(dir);
  constexpr int kRanks = 4;
  std::vector<std::pair<size_t, size_t>> calls;
  const auto m = Qwen3Model::load_sharded(&ckpt, io::load_model_config(dir), ops::make_rank_backends("cpu", kRanks),
                                          parallel::make_group("cpu", kRanks),
                                          [&](size_t done, size_t total) { calls.emplace_back(done, total); });
  ASSERT_FALSE(calls.empty());
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].second, kRanks * ckpt.total_bytes()) << i;
    if (i > 0) {
      EXPECT_GE(calls[i].first, calls[i - 1].first) << i;
    }
  }
  EXPECT_EQ(calls.back().first, calls.back().second);
}

// Every rank's load runs at the same time as the others', rank 0 on the
// caller's thread: each waits (up to 10 s) until all have started.
TEST(SplitLoad, RanksLoadAtOnce) {
  constexpr int kRanks = 3;
  const auto group = parallel::make_group("cpu", kRanks);
  std::vector<parallel::Communicator*> comms;
  for (const auto& c : group) comms.push_back(c.get());
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  std::vector<bool> met(kRanks, false);
  std::vector<std::thread::id> threads(kRanks);
  load_on_every_rank(comms, {}, [&](int r, const LoadProgress&) {
    threads[static_cast<size_t>(r)] = std::this_thread::get_id();
    std::unique_lock lock(mu);
    ++started;
    cv.notify_all();
    met[static_cast<size_t>(r)] = cv.wait_for(lock, std::chrono::seconds(10), [&] { return started == kRanks; });
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(met[static_cast<size_t>(r)]) << "rank " << r << " loaded alone";
  EXPECT_EQ(threads[0], std::this_thread::get_id());
  EXPECT_NE(threads[1], threads[0]);
  EXPECT_NE(threads[2], threads[1]);
}

// A checkpoint that does not match its config fails on every rank's thread;
// the error still names the file and the tensor, and nothing waits forever.
TEST(SplitLoad, ARankErrorNamesTheFileAndTensor) {
  const auto fixture = std::filesystem::path(FD_FIXTURES_DIR) / "tiny-qwen3";
  const auto dir = std::filesystem::path(::testing::TempDir()) / "tp_load_mismatch";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(fixture, dir);
  io::ModelConfig cfg = io::load_model_config(dir);
  cfg.intermediate_size = 256;  // still divisible by the ranks; not the weights' 128
  const auto ckpt = io::Checkpoint::open(dir);
  try {
    Qwen3Model::load_sharded(&ckpt, cfg, ops::make_rank_backends("cpu", 2), parallel::make_group("cpu", 2));
    FAIL() << "a 256-wide MLP loaded from 128-wide weights";
  } catch (const flashdraft::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(".safetensors"), std::string::npos) << what;
    EXPECT_NE(what.find("mlp."), std::string::npos) << what;
    EXPECT_NE(what.find("has shape"), std::string::npos) << what;
  }
  std::filesystem::remove_all(dir);
}

TEST(SplitForward, OneRequestConveniencesRefuseAShard) {
  const auto dir = std::filesystem::path(FD_FIXTURES_DIR) / "tiny-qwen3";
  const auto ckpt = io::Checkpoint::open(dir);
  auto m = Qwen3Model::load_sharded(&ckpt, io::load_model_config(dir), ops::make_rank_backends("cpu", 2),
                                    parallel::make_group("cpu", 2));
  auto cache = m->new_cache();
  std::vector<float> logits;
  const std::vector<int32_t> ids{1, 2};
  EXPECT_THROW(m->forward(ids, cache, logits), flashdraft::Error);  // it would wait for the other rank forever
}

}  // namespace
}  // namespace flashdraft::model
