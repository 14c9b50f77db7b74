#pragma once
// SIGTERM and SIGINT as a request to stop gracefully, whichever thread the
// kernel hands them to. Blocking them is not enough: libraries start threads
// before main runs (OpenBLAS's pool) with the signals unblocked, and a signal
// delivered to one of those with its default action kills the process. A
// handler runs wherever the signal lands and only writes its number to a
// pipe that wait() reads. SIGPIPE is ignored: a client that hangs up
// mid-write must not kill the server.
#include <chrono>

namespace flashdraft::server {

class StopSignals {
 public:
  StopSignals();  // one at a time per process
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The number of a signal received (SIGTERM or SIGINT), waiting up to `timeout`; 0 if none came.
  int wait(std::chrono::milliseconds timeout);
};

}  // namespace flashdraft::server
