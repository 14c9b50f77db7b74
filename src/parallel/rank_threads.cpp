#include "parallel/rank_threads.h"

namespace flashdraft::parallel {

RankThreads::RankThreads(std::vector<Communicator*> comms) : comms_(std::move(comms)) {
  for (int r = 1; r < size(); ++r) threads_.emplace_back([this, r] { loop(r); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void RankThreads::loop(int rank) {
  comms_[static_cast<size_t>(rank)]->bind_thread();
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(rank);
    } catch (...) {
      error = std::current_exception();
      comms_[static_cast<size_t>(rank)]->abort();
    }
    std::lock_guard lock(mu_);
    if (error && !error_) error_ = error;
    if (--pending_ == 0) cv_.notify_all();
  }
}

void RankThreads::run(const std::function<void(int rank)>& fn) {
  {
    std::lock_guard lock(mu_);
    job_ = &fn;
    pending_ = size() - 1;
    error_ = nullptr;
    ++generation_;
  }
  cv_.notify_all();
  std::exception_ptr error;
  try {
    fn(0);
  } catch (...) {
    error = std::current_exception();
    comms_[0]->abort();
  }
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return pending_ == 0; });
  if (error || error_) comms_[0]->clear_abort();  // every rank has left its collectives
  // Rank 0's own error first: the others' are usually "another rank failed".
  if (error) std::rethrow_exception(error);
  if (error_) std::rethrow_exception(error_);
}

}  // namespace flashdraft::parallel
