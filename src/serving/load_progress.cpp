#include "serving/load_progress.h"

#include <fmt/format.h>

#include <string>

namespace flashdraft::serving {
namespace {

constexpr auto kRedrawEvery = std::chrono::milliseconds(100);
constexpr int kBarWidth = 30;

}  // namespace

LoadProgress::LoadProgress(std::FILE* out, bool draw_bar, std::chrono::milliseconds quiet_period, const char* label)
    : out_(out), tty_(draw_bar), quiet_period_(quiet_period), label_(label), start_(Clock::now()), last_draw_(start_) {}

double LoadProgress::elapsed_seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void LoadProgress::update(uint64_t done_bytes, uint64_t total_bytes) {
  if (!tty_ || total_bytes == 0) return;
  auto now = Clock::now();
  if (now - start_ < quiet_period_) return;
  if (bar_shown_ && now - last_draw_ < kRedrawEvery && done_bytes < total_bytes) return;
  last_draw_ = now;
  bar_shown_ = true;
  double fraction = static_cast<double>(done_bytes) / static_cast<double>(total_bytes);
  int filled = static_cast<int>(fraction * kBarWidth);
  fmt::print(out_, "\r{} [{}{}] {:3.0f}% {:.0f}/{:.0f} MB", label_, std::string(filled, '#'),
             std::string(kBarWidth - filled, '.'), fraction * 100.0, megabytes(done_bytes), megabytes(total_bytes));
  std::fflush(out_);
}

void LoadProgress::clear() {
  // "\33[2K" clears the bar's line before the final message takes its place.
  if (bar_shown_) fmt::print(out_, "\r\33[2K");
  bar_shown_ = false;
}

void LoadProgress::finish(uint64_t total_bytes) {
  clear();
  fmt::print(out_, "flashdraft: loaded {:.1f} MB in {:.2f} s\n", megabytes(total_bytes), elapsed_seconds());
  std::fflush(out_);
}

}  // namespace flashdraft::serving
