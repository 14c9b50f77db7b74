#include "server/peer_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace flashdraft::server {
namespace {

// Port and printable address of a socket address.
bool describe(const sockaddr_storage& a, int* port, std::string* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    *port = ntohs(in->sin_port);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
  } else if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    *port = ntohs(in6->sin6_port);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
  } else {
    return false;
  }
  *addr = text;
  return true;
}

bool matches(int fd, const std::string& remote_addr, int remote_port, int local_port) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage local{}, peer{};
  socklen_t n = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &n) != 0) return false;
  n = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &n) != 0) return false;
  int lport = 0, pport = 0;
  std::string laddr, paddr;
  if (!describe(local, &lport, &laddr) || !describe(peer, &pport, &paddr)) return false;
  return lport == local_port && pport == remote_port && paddr == remote_addr;
}

}  // namespace

PeerWatch::PeerWatch(const std::string& remote_addr, int remote_port, int local_port) {
  // The handler's thread holds the connection open, so its descriptor cannot
  // be closed and reused while the watch lives.
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (matches(static_cast<int>(fd), remote_addr, remote_port, local_port)) {
      fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
}

bool PeerWatch::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  // Readable without a hang-up flag: data (a pipelined request) or EOF.
  char byte;
  return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

}  // namespace flashdraft::server
