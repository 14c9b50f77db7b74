#include "ops/cpu/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace flashdraft::ops::cpu {
namespace {

// One run_tasks call. It lives on the caller's stack: the caller returns only
// once no worker can still be reading it (Pool::active_).
struct Job {
  Job(const std::function<void(int64_t)>& t, int64_t n) : task(&t), tasks(n) {}

  const std::function<void(int64_t)>* task;
  int64_t tasks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex error_mutex;
  std::exception_ptr error;

  // Claims and runs tasks until none are left.
  void work() {
    for (int64_t i; (i = next.fetch_add(1)) < tasks;) {
      try {
        (*task)(i);
      } catch (...) {
        std::lock_guard lk(error_mutex);
        if (!error) error = std::current_exception();
      }
      done.fetch_add(1, std::memory_order_release);
    }
  }
};

// A forward's matmuls follow each other within microseconds; a worker that
// went to sleep would take tens of microseconds to wake.
constexpr auto kPauseBeforeYield = std::chrono::microseconds(20);
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(200);
constexpr size_t kMaxWorkers = 63;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The caller's wait for the workers' last tasks: short, unless a worker lost
// its core to another process; then yield it the caller's.
template <class Done>
void wait_until(Done done) {
  for (int i = 0; !done(); ++i) {
    if (i < 4096) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

class Pool {
 public:
  // Never destroyed: its threads wait for work until the process ends, so
  // exit() never waits on them, and a matmul running on another thread while
  // static destructors run (a server shutting down) finds the pool intact.
  static Pool& get() {
    static Pool& pool = *new Pool;
    return pool;
  }

  // False when another caller holds the pool.
  bool run(int64_t tasks, const std::function<void(int64_t)>& task) {
    std::unique_lock busy(busy_, std::try_to_lock);
    if (!busy) return false;
    grow(static_cast<size_t>(tasks - 1));
    Job job(task, tasks);
    job_.store(&job);
    gen_.fetch_add(1);
    if (sleepers_.load() > 0) {
      { std::lock_guard lk(sleep_mutex_); }
      wake_.notify_all();
    }
    job.work();
    wait_until([&] { return job.done.load(std::memory_order_acquire) == tasks; });
    // A worker that registers after this store finds no job; one that
    // registered before it is waited for (both sides seq_cst: Dekker).
    job_.store(nullptr);
    wait_until([&] { return active_.load() == 0; });
    if (job.error) std::rethrow_exception(job.error);
    return true;
  }

 private:
  Pool() = default;

  // Starts workers up to `want` (never more than kMaxWorkers); a thread that
  // cannot start leaves the tasks to those that did.
  void grow(size_t want) {
    want = std::min(want, kMaxWorkers);
    try {
      // The generation is read here, not by the new thread: one that starts
      // late must still see the next bump (this job's).
      while (workers_.size() < want) workers_.emplace_back([this, seen = gen_.load()] { loop(seen); });
    } catch (const std::system_error&) {
    }
  }

  [[noreturn]] void loop(uint64_t seen) {
    for (;;) {
      wait_for_new(seen);
      seen = gen_.load();
      active_.fetch_add(1);
      if (Job* job = job_.load()) job->work();
      active_.fetch_sub(1);
    }
  }

  // Spins with pause for a few microseconds, then yields the core to any
  // other runnable thread (two test processes on two cores, say), then sleeps.
  void wait_for_new(uint64_t seen) {
    const auto start = std::chrono::steady_clock::now();
    bool yielding = false;
    for (int i = 0; gen_.load(std::memory_order_acquire) == seen; ++i) {
      if (yielding) {
        std::this_thread::yield();
      } else {
        cpu_relax();
      }
      if ((i & 63) != 63) continue;
      const auto waited = std::chrono::steady_clock::now() - start;
      yielding = waited > kPauseBeforeYield;
      if (waited > kSpinBeforeSleep) {
        std::unique_lock lk(sleep_mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lk, [&] { return gen_.load() != seen; });
        sleepers_.fetch_sub(1);
        return;
      }
    }
  }

  std::mutex busy_;  // held by the one caller the pool serves
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> gen_{0};  // bumped for every job
  std::atomic<Job*> job_{nullptr};
  std::atomic<int> active_{0};  // workers between registering and leaving a job
  std::atomic<int> sleepers_{0};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

}  // namespace

void run_tasks(int64_t tasks, const std::function<void(int64_t)>& task) {
  if (tasks <= 0) return;
  if (tasks > 1 && Pool::get().run(tasks, task)) return;
  // Alone, through the same Job: every task runs, then the first error.
  Job job(task, tasks);
  job.work();
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace flashdraft::ops::cpu
