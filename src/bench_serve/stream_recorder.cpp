#include "bench_serve/stream_recorder.h"

#include "bench_serve/stream_chunk.h"

namespace flashdraft::bench_serve {
namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void StreamRecorder::on_bytes(Clock::time_point at, std::string_view bytes) {
  events_.clear();
  parser_.feed(bytes, events_);
  for (const SseEvent& e : events_) on_event(at, e);
}

void StreamRecorder::on_event(Clock::time_point at, const SseEvent& event) {
  if (done_) return;  // nothing counts after [DONE]
  const StreamChunk chunk = parse_stream_chunk(event.event, event.data);
  if (chunk.done) {
    done_ = true;
    return;
  }
  if (chunk.error && !stream_error_) stream_error_ = *chunk.error;
  if (chunk.usage) {
    result_.usage_reported = true;
    result_.prompt_tokens = chunk.usage->prompt_tokens;
    result_.output_tokens = chunk.usage->completion_tokens;
  }
  if (chunk.has_content) {
    if (result_.content_chunks == 0) {
      result_.ttft = seconds(at - sent_);
    } else {
      result_.itl.push_back(seconds(at - last_));
    }
    last_ = at;
    ++result_.content_chunks;
  }
  finished_ = finished_ || chunk.finished;
}

RequestResult StreamRecorder::finish(Clock::time_point at, const std::string& transport_error) {
  events_.clear();
  parser_.finish(events_);
  for (const SseEvent& e : events_) on_event(at, e);
  RequestResult r = std::move(result_);
  r.e2e = seconds(at - sent_);
  if (!r.usage_reported) r.output_tokens = r.content_chunks;
  if (stream_error_) {
    r.error = "error in the stream: " + *stream_error_;
  } else if (!done_ && !transport_error.empty()) {  // after [DONE] the answer is whole
    r.error = transport_error;
  } else if (!done_ && !finished_) {
    r.error = "the stream ended early (no finish_reason, no data: [DONE])";
  } else if (r.content_chunks == 0) {
    r.error = "the stream carried no generated text";
  }
  r.ok = r.error.empty();
  return r;
}

}  // namespace flashdraft::bench_serve
