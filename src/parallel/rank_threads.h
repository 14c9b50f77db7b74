#pragma once
// One thread per tensor-parallel rank past the first: run(fn) calls fn(r) on
// rank r's thread for r >= 1 and fn(0) on the caller's, and returns when all
// are done. The ranks then run the same code on their own shards (SPMD),
// meeting in the communicator's collectives. An exception on any rank aborts
// the group's collectives (so no rank waits forever) and is rethrown by run.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "parallel/communicator.h"

namespace flashdraft::parallel {

class RankThreads {
 public:
  // comms: every rank's communicator (rank r's thread binds to comms[r]).
  explicit RankThreads(std::vector<Communicator*> comms);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  void run(const std::function<void(int rank)>& fn);

 private:
  void loop(int rank);

  std::vector<Communicator*> comms_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace flashdraft::parallel
