#pragma once
// Feedback while weights load. On a terminal a bar appears once loading has
// taken more than a second (fast loads stay quiet); either way one final
// "loaded X MB in Y s" line is printed, so logs show the load cost too.
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace flashdraft::serving {

// Bytes as the MB that the progress lines print (MiB, like du -m).
inline double megabytes(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

class LoadProgress {
 public:
  // draw_bar: whether `out` is a terminal; quiet_period: how long a load
  // may take before the bar appears; label: the bar's first word.
  LoadProgress(std::FILE* out, bool draw_bar, std::chrono::milliseconds quiet_period = std::chrono::milliseconds(1000),
               const char* label = "loading");
  // Progress callback for the model loader.
  void update(uint64_t done_bytes, uint64_t total_bytes);
  // Replaces the bar (if any) with the final line.
  void finish(uint64_t total_bytes);
  // Removes the bar (if any), for a caller that prints its own final line.
  void clear();
  double elapsed_seconds() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::FILE* out_;
  bool tty_;
  std::chrono::milliseconds quiet_period_;
  const char* label_;
  bool bar_shown_ = false;
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

}  // namespace flashdraft::serving
