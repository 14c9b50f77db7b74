#include "server/stop_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.h"

namespace flashdraft::server {
namespace {

int pipe_fds[2] = {-1, -1};

extern "C" void on_stop_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = write(pipe_fds[1], &byte, 1);  // a full pipe already holds a signal
  errno = saved;
}

}  // namespace

StopSignals::StopSignals() {
  if (pipe_fds[0] >= 0) throw Error("StopSignals: only one at a time");
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) throw Error("StopSignals: pipe2 failed");
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

StopSignals::~StopSignals() {
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  pipe_fds[0] = pipe_fds[1] = -1;
}

int StopSignals::wait(std::chrono::milliseconds timeout) {
  pollfd p{pipe_fds[0], POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return 0;
  unsigned char byte = 0;
  return read(pipe_fds[0], &byte, 1) == 1 ? byte : 0;
}

}  // namespace flashdraft::server
