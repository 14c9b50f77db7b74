#pragma once
// Turns the bytes of one streamed response, with the time each piece
// arrived, into a RequestResult: TTFT at the first chunk carrying output,
// one ITL sample per later such chunk, usage from the final chunk, and the
// errors a stream can end with. Knows nothing of HTTP, so tests drive it
// with made-up bytes and times.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_serve/request_result.h"
#include "bench_serve/sse_parser.h"

namespace flashdraft::bench_serve {

using Clock = std::chrono::steady_clock;

class StreamRecorder {
 public:
  explicit StreamRecorder(Clock::time_point sent) : sent_(sent), last_(sent) {}
  void on_bytes(Clock::time_point at, std::string_view bytes);
  // transport_error: the connection failed or was cut (empty if it ended cleanly).
  RequestResult finish(Clock::time_point at, const std::string& transport_error);

 private:
  void on_event(Clock::time_point at, const SseEvent& event);

  Clock::time_point sent_, last_;
  SseParser parser_;
  std::vector<SseEvent> events_;
  RequestResult result_;
  bool done_ = false, finished_ = false;
  std::optional<std::string> stream_error_;
};

}  // namespace flashdraft::bench_serve
