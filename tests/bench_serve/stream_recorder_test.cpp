// From timed stream bytes to TTFT, ITL, token counts and the errors a
// stream can end with. Times are made up, so the figures are exact.
#include "bench_serve/stream_recorder.h"

#include <gtest/gtest.h>

namespace flashdraft::bench_serve {
namespace {

using std::chrono::milliseconds;

const Clock::time_point t0{};

std::string text_event(const std::string& text) {
  return "data: {\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":null}]}\n\n";
}
const std::string kFinish = "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n";
const std::string kUsage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":9}}\n\n";
const std::string kDone = "data: [DONE]\n\n";

TEST(StreamRecorder, TtftItlAndUsage) {
  StreamRecorder r(t0);
  r.on_bytes(t0 + milliseconds(100), text_event("a"));
  // Two chunks in one read: one gap each, the second of zero length.
  r.on_bytes(t0 + milliseconds(130), text_event("bc") + text_event("d"));
  r.on_bytes(t0 + milliseconds(200), text_event("ef"));
  r.on_bytes(t0 + milliseconds(210), kFinish + kUsage);
  r.on_bytes(t0 + milliseconds(211), kDone);
  RequestResult res = r.finish(t0 + milliseconds(212), "");
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_DOUBLE_EQ(res.ttft, 0.100);
  ASSERT_EQ(res.itl.size(), 3u);
  EXPECT_NEAR(res.itl[0], 0.030, 1e-12);
  EXPECT_NEAR(res.itl[1], 0.0, 1e-12);
  EXPECT_NEAR(res.itl[2], 0.070, 1e-12);
  EXPECT_EQ(res.content_chunks, 4);
  EXPECT_TRUE(res.usage_reported);
  EXPECT_EQ(res.prompt_tokens, 5);
  EXPECT_EQ(res.output_tokens, 9);  // usage, not the chunk count
  EXPECT_DOUBLE_EQ(res.e2e, 0.212);
}

TEST(StreamRecorder, WithoutUsageChunksAreCounted) {
  StreamRecorder r(t0);
  r.on_bytes(t0 + milliseconds(10), text_event("a") + text_event("b") + kFinish + kDone);
  RequestResult res = r.finish(t0 + milliseconds(20), "");
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_FALSE(res.usage_reported);
  EXPECT_EQ(res.output_tokens, 2);
}

TEST(StreamRecorder, FinishReasonWithoutDoneIsComplete) {
  StreamRecorder r(t0);
  r.on_bytes(t0 + milliseconds(10), text_event("a") + kFinish);
  EXPECT_TRUE(r.finish(t0 + milliseconds(20), "").ok);
}

TEST(StreamRecorder, CutStreamFails) {
  StreamRecorder r(t0);
  r.on_bytes(t0 + milliseconds(10), text_event("a"));
  RequestResult res = r.finish(t0 + milliseconds(20), "");
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.error.find("ended early"), std::string::npos) << res.error;

  StreamRecorder cut(t0);
  cut.on_bytes(t0 + milliseconds(10), text_event("a"));
  RequestResult res2 = cut.finish(t0 + milliseconds(20), "reading the answer failed");
  EXPECT_FALSE(res2.ok);
  EXPECT_EQ(res2.error, "reading the answer failed");
}

TEST(StreamRecorder, TransportErrorAfterDoneIsIgnored) {
  StreamRecorder r(t0);
  r.on_bytes(t0 + milliseconds(10), text_event("a") + kDone);
  EXPECT_TRUE(r.finish(t0 + milliseconds(20), "reading the answer failed").ok);
}

TEST(StreamRecorder, ErrorEventFails) {
  StreamRecorder r(t0);
  r.on_bytes(t0 + milliseconds(10), text_event("a") + "data: {\"error\":{\"message\":\"engine died\"}}\n\n" + kDone);
  RequestResult res = r.finish(t0 + milliseconds(20), "");
  EXPECT_FALSE(res.ok);
  EXPECT_EQ(res.error, "error in the stream: engine died");
}

TEST(StreamRecorder, NoContentFails) {
  StreamRecorder r(t0);
  r.on_bytes(t0 + milliseconds(10), kFinish + kUsage + kDone);
  RequestResult res = r.finish(t0 + milliseconds(20), "");
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.error.find("no generated text"), std::string::npos) << res.error;
}

TEST(StreamRecorder, NothingCountsAfterDone) {
  StreamRecorder r(t0);
  r.on_bytes(t0 + milliseconds(10), text_event("a") + kDone + text_event("b"));
  RequestResult res = r.finish(t0 + milliseconds(20), "");
  ASSERT_TRUE(res.ok);
  EXPECT_EQ(res.content_chunks, 1);
}

}  // namespace
}  // namespace flashdraft::bench_serve
