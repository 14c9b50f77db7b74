#include "bench_serve/progress_bar.h"

#include <fmt/format.h>

#include <string>

namespace flashdraft::bench_serve {

namespace {
constexpr size_t kWidth = 30;
}

void ProgressBar::update(size_t done, size_t failed, double elapsed_seconds) {
  if (!draw_) return;
  const size_t filled = total_ == 0 ? kWidth : done * kWidth / total_;
  std::string line = fmt::format("\r\033[2Kbench serve [{}{}] {}/{} requests", std::string(filled, '#'),
                                 std::string(kWidth - filled, '.'), done, total_);
  if (failed > 0) line += fmt::format(", {} failed", failed);
  line += fmt::format(", {:.1f} s", elapsed_seconds);
  std::fputs(line.c_str(), out_);
  std::fflush(out_);
  shown_ = true;
}

void ProgressBar::clear() {
  if (!shown_) return;
  std::fputs("\r\033[2K", out_);
  std::fflush(out_);
  shown_ = false;
}

}  // namespace flashdraft::bench_serve
