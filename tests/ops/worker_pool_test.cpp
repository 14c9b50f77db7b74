// The CPU ops' worker pool: every task runs exactly once, errors reach the
// caller, and callers that arrive while the pool is busy still get all their
// tasks done (on their own thread).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ops/cpu/worker_pool.h"

namespace flashdraft::ops {
namespace {

TEST(WorkerPool, RunsEveryTaskOnce) {
  for (int64_t tasks : {1, 2, 3, 7, 64}) {
    for (int rep = 0; rep < 200; ++rep) {  // back to back: workers still spinning, and woken
      std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
      cpu::run_tasks(tasks, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1); });
      for (int64_t i = 0; i < tasks; ++i) ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << tasks << " tasks, task " << i;
    }
  }
  cpu::run_tasks(0, [](int64_t) { FAIL() << "no task to run"; });
}

TEST(WorkerPool, UsesOtherThreads) {
  // Two tasks that each wait for the other to start can only finish when a
  // pool thread runs one of them while the caller runs the other.
  std::atomic<int> started{0};
  std::atomic<bool> both{false};
  cpu::run_tasks(2, [&](int64_t) {
    started.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    if (started.load() == 2) both = true;
  });
  EXPECT_TRUE(both.load());
}

TEST(WorkerPool, WakesAfterSleeping) {
  for (int rep = 0; rep < 3; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the workers' spin: they sleep
    std::atomic<int> sum{0};
    cpu::run_tasks(4, [&](int64_t i) { sum.fetch_add(static_cast<int>(i) + 1); });
    EXPECT_EQ(sum.load(), 10);
  }
}

TEST(WorkerPool, RethrowsATaskError) {
  std::atomic<int> ran{0};
  EXPECT_THROW(cpu::run_tasks(8,
                              [&](int64_t i) {
                                ran.fetch_add(1);
                                if (i == 5) throw std::runtime_error("task 5");
                              }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 8);  // the other tasks still ran
  std::atomic<int> after{0};
  cpu::run_tasks(3, [&](int64_t) { after.fetch_add(1); });
  EXPECT_EQ(after.load(), 3);  // and the pool still serves
}

TEST(WorkerPool, OneTaskRunsOnTheCallerWithTheSameErrorRule) {
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on;
  cpu::run_tasks(1, [&](int64_t) { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, caller);
  EXPECT_THROW(cpu::run_tasks(1, [](int64_t) { throw std::runtime_error("alone"); }), std::runtime_error);
}

TEST(WorkerPool, ConcurrentCallersAllFinish) {
  // Tensor-parallel ranks call from several threads at once.
  constexpr int kCallers = 4, kCalls = 300, kTasks = 5;
  std::vector<std::atomic<int64_t>> sums(kCallers);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int k = 0; k < kCalls; ++k) cpu::run_tasks(kTasks, [&](int64_t i) { sums[c].fetch_add(i + 1); });
    });
  }
  for (auto& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(sums[c].load(), int64_t{kCalls} * 15) << "caller " << c;
}

}  // namespace
}  // namespace flashdraft::ops
