#pragma once
// Whether the client of an HTTP request has hung up, so the engine can stop
// working for it. cpp-httplib 0.11 (Debian 12's) does not tell a handler
// about its connection, so the watch finds the connection's socket by its
// two ends and asks the kernel whether the peer closed it.
#include <string>

namespace flashdraft::server {

class PeerWatch {
 public:
  // The connection from remote_addr:remote_port to this process's local_port.
  PeerWatch(const std::string& remote_addr, int remote_port, int local_port);
  // True once the peer closed or reset the connection. False when the socket
  // was not found (the watch then never fires; writes still fail).
  bool gone() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace flashdraft::server
