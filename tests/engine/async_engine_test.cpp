// AsyncEngine: the engine on its own thread. Requests submitted from several
// threads at once get exactly the tokens a sequential Engine gives them;
// abort and shutdown from other threads finish requests with
// FinishReason::Abort; nothing is left holding KV blocks afterwards; the
// first two with serial steps and with overlapped scheduling.
#include "engine/async_engine.h"

#include <gtest/gtest.h>

#include <ctime>
#include <thread>

#include "core/error.h"
#include "shipped_models.h"

namespace flashdraft::engine::testing {
namespace {

using std::chrono::milliseconds;

constexpr int kTokens = 24;

std::unique_ptr<Engine> make_engine(int64_t running, int64_t blocks = 128, bool overlap = false) {
  EngineConfig c;
  c.max_running = running;
  c.num_kv_blocks = blocks;
  c.overlap_scheduling = overlap;
  c.eos_token_ids = shipped().eos;
  return std::make_unique<Engine>(*shipped().target, &shipped().drafter("drafter-full"), c);
}

// Reads a channel to its end: the tokens of every item, and the last item.
struct Drained {
  std::vector<int32_t> tokens;
  StreamItem last;
};
Drained drain(RequestChannel& channel) {
  Drained d;
  while (!channel.done()) {
    auto item = channel.pop(milliseconds(60000));
    if (!item) {
      ADD_FAILURE() << "no output for a minute";
      break;
    }
    d.tokens.insert(d.tokens.end(), item->tokens.begin(), item->tokens.end());
    if (item->last()) d.last = std::move(*item);
  }
  return d;
}

void expect_all_blocks_free(const AsyncEngine& async) {
  EXPECT_EQ(async.in_flight(), 0u);
  EXPECT_EQ(async.free_kv_blocks(), async.num_kv_blocks());
}

// Serial steps (the CPU's default) and overlapped scheduling (a GPU's).
class AsyncEngineModes : public ::testing::TestWithParam<bool> {};

TEST_P(AsyncEngineModes, ConcurrentSubmittersGetTheSequentialTokens) {
  constexpr int kThreads = 4, kPerThread = 3;
  std::vector<Prompt> prompts(humaneval_prompts().begin(), humaneval_prompts().begin() + kThreads * kPerThread);
  EngineConfig sequential;
  sequential.max_running = 1;
  sequential.num_kv_blocks = 64;
  const auto want = run_all(&shipped().drafter("drafter-full"), sequential, prompts, greedy(kTokens)).tokens;

  AsyncEngine async(make_engine(4, 128, GetParam()));
  std::vector<Drained> got(prompts.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::pair<size_t, RequestHandle>> mine;
      for (int k = 0; k < kPerThread; ++k) {
        const size_t i = static_cast<size_t>(t * kPerThread + k);
        mine.emplace_back(i, async.submit(prompts[i].ids, greedy(kTokens)));
      }
      for (auto& [i, h] : mine) got[i] = drain(*h.channel);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[i].tokens, want[i]) << prompts[i].task_id;
    ASSERT_TRUE(got[i].last.result.has_value());
    EXPECT_EQ(got[i].last.result->tokens, want[i]);
    EXPECT_NE(got[i].last.result->reason, FinishReason::Abort);
    EXPECT_NE(got[i].last.result->reason, FinishReason::Error);
  }
  expect_all_blocks_free(async);
}

TEST_P(AsyncEngineModes, AbortFromAnotherThread) {
  AsyncEngine async(make_engine(2, 128, GetParam()));
  SamplingParams long_run = greedy(1500);
  long_run.ignore_eos = true;
  const RequestHandle h = async.submit(humaneval_prompts()[3].ids, long_run);
  const RequestHandle other = async.submit(humaneval_prompts()[4].ids, greedy(8));
  Drained d;
  std::thread reader([&] { d = drain(*h.channel); });
  // Abort once the request is decoding.
  while (!h.channel->finished() && async.free_kv_blocks() == async.num_kv_blocks()) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(async.abort(h));
  reader.join();
  ASSERT_TRUE(d.last.result.has_value());
  EXPECT_EQ(d.last.result->reason, FinishReason::Abort);
  EXPECT_LT(d.tokens.size(), 1500u);
  EXPECT_EQ(d.last.result->tokens, d.tokens);
  EXPECT_FALSE(async.abort(h));  // finished
  EXPECT_EQ(drain(*other.channel).last.result->tokens.size(), 8u);
  expect_all_blocks_free(async);
}

INSTANTIATE_TEST_SUITE_P(AsyncEngine, AsyncEngineModes, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Overlapped" : "Serial"; });

TEST(AsyncEngine, ShutdownAbortsRequestsInFlight) {
  auto async = std::make_unique<AsyncEngine>(make_engine(2));
  SamplingParams long_run = greedy(1500);
  long_run.ignore_eos = true;
  std::vector<RequestHandle> handles;
  for (size_t i = 0; i < 5; ++i) handles.push_back(async->submit(humaneval_prompts()[i].ids, long_run));
  while (handles[0].channel->pop(milliseconds(0)).has_value() == false) std::this_thread::sleep_for(milliseconds(5));
  async->shutdown();
  expect_all_blocks_free(*async);
  EXPECT_THROW(async->submit(humaneval_prompts()[0].ids, long_run), Error);
  for (auto& h : handles) {
    EXPECT_TRUE(h.channel->finished());
    const Drained d = drain(*h.channel);
    ASSERT_TRUE(d.last.result.has_value());
    EXPECT_EQ(d.last.result->reason, FinishReason::Abort);
    EXPECT_FALSE(async->abort(h));
  }
  async->shutdown();  // idempotent
  async.reset();
}

TEST(AsyncEngine, RejectedRequestFinishesWithError) {
  AsyncEngine async(make_engine(2));
  const RequestHandle h = async.submit({}, greedy(4));
  const Drained d = drain(*h.channel);
  ASSERT_TRUE(d.last.result.has_value());
  EXPECT_EQ(d.last.result->reason, FinishReason::Error);
  EXPECT_NE(d.last.error.find("prompt"), std::string::npos) << d.last.error;
  // The engine goes on serving.
  const RequestHandle ok = async.submit(humaneval_prompts()[0].ids, greedy(4));
  EXPECT_EQ(drain(*ok.channel).tokens.size(), 4u);
  expect_all_blocks_free(async);
}

TEST(AsyncEngine, IdleLoopSleeps) {
  AsyncEngine async(make_engine(2));
  const RequestHandle h = async.submit(humaneval_prompts()[0].ids, greedy(4));
  drain(*h.channel);
  EXPECT_FALSE(h.channel->pop(milliseconds(10)).has_value());  // done: nothing more
  // Process CPU time over 300 ms of idling: a spinning loop would take most
  // of a core. (The pause first lets BLAS worker threads go to sleep.)
  std::this_thread::sleep_for(milliseconds(100));
  const std::clock_t before = std::clock();
  std::this_thread::sleep_for(milliseconds(300));
  const double cpu_seconds = static_cast<double>(std::clock() - before) / CLOCKS_PER_SEC;
  EXPECT_LT(cpu_seconds, 0.1) << "the engine thread spins while idle";
}

}  // namespace
}  // namespace flashdraft::engine::testing
