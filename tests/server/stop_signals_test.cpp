// SIGTERM / SIGINT reach `flashdraft serve` as a request to stop, whichever
// thread the kernel delivers them to (a thread that would otherwise die of
// the default action takes the whole process with it).
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "server/stop_signals.h"

namespace flashdraft::server {
namespace {

using std::chrono::milliseconds;

TEST(StopSignals, ASignalToAnyThreadIsReported) {
  StopSignals stop;
  EXPECT_EQ(stop.wait(milliseconds(0)), 0);
  // Delivered to a thread that does not block it, as to a library's thread pool.
  std::thread other([] { pthread_kill(pthread_self(), SIGTERM); });
  other.join();
  EXPECT_EQ(stop.wait(milliseconds(5000)), SIGTERM);
  EXPECT_EQ(stop.wait(milliseconds(0)), 0);  // reported once
  kill(getpid(), SIGINT);
  EXPECT_EQ(stop.wait(milliseconds(5000)), SIGINT);
}

TEST(StopSignals, OneAtATime) {
  StopSignals stop;
  EXPECT_ANY_THROW(StopSignals second);
}

}  // namespace
}  // namespace flashdraft::server
