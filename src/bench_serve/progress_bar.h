#pragma once
// "[#######.............] 35/100 requests, 2 failed, 12.3 s" redrawn in place
// on a terminal; nothing at all when `out` is not one (logs get the table).
#include <cstdio>

namespace flashdraft::bench_serve {

class ProgressBar {
 public:
  ProgressBar(std::FILE* out, bool is_terminal, size_t total) : out_(out), draw_(is_terminal), total_(total) {}
  void update(size_t done, size_t failed, double elapsed_seconds);
  // Erases the bar so what follows starts on a clean line.
  void clear();

 private:
  std::FILE* out_;
  bool draw_;
  size_t total_;
  bool shown_ = false;
};

}  // namespace flashdraft::bench_serve
