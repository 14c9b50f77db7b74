// SSE framing: events split across reads anywhere, CRLF, comments, fields.
#include "bench_serve/sse_parser.h"

#include <gtest/gtest.h>

namespace flashdraft::bench_serve {
namespace {

std::vector<SseEvent> parse_in_pieces(const std::string& stream, const std::vector<size_t>& cuts) {
  SseParser p;
  std::vector<SseEvent> out;
  size_t at = 0;
  for (size_t cut : cuts) {
    p.feed(std::string_view(stream).substr(at, cut - at), out);
    at = cut;
  }
  p.feed(std::string_view(stream).substr(at), out);
  p.finish(out);
  return out;
}

void expect_events(const std::vector<SseEvent>& got, const std::vector<std::pair<std::string, std::string>>& want,
                   const std::string& context) {
  ASSERT_EQ(got.size(), want.size()) << context;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].event, want[i].first) << context << " event " << i;
    EXPECT_EQ(got[i].data, want[i].second) << context << " event " << i;
  }
}

const std::string kStream =
    ": keep-alive\r\n"
    "data: {\"a\":1}\r\n\r\n"
    "event: error\n"
    "data: {\"error\":{\"message\":\"x\"}}\n\n"
    "data:no-space\r\r"
    "data: line one\n"
    "data: line two\n\n"
    "id: 7\nretry: 10\ndata: [DONE]\n\n";

const std::vector<std::pair<std::string, std::string>> kEvents = {
    {"", "{\"a\":1}"}, {"error", "{\"error\":{\"message\":\"x\"}}"}, {"", "no-space"},
    {"", "line one\nline two"}, {"", "[DONE]"}};

TEST(SseParser, WholeStream) { expect_events(parse_in_pieces(kStream, {}), kEvents, "whole"); }

TEST(SseParser, SplitAtEveryByte) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  expect_events(parse_in_pieces(kStream, cuts), kEvents, "byte by byte");
}

TEST(SseParser, SplitInTwoAnywhere) {
  // Includes the cut between the '\r' and '\n' of a CRLF, and inside "data:".
  for (size_t cut = 1; cut < kStream.size(); ++cut)
    expect_events(parse_in_pieces(kStream, {cut}), kEvents, "cut at " + std::to_string(cut));
}

TEST(SseParser, EventsDispatchOnlyAtTheBlankLine) {
  SseParser p;
  std::vector<SseEvent> out;
  p.feed("data: {\"x\":", out);
  p.feed("1}\n", out);
  EXPECT_TRUE(out.empty());
  p.feed("\n", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, "{\"x\":1}");
}

TEST(SseParser, FinishDeliversAnUnterminatedEvent) {
  SseParser p;
  std::vector<SseEvent> out;
  p.feed("data: [DONE]", out);
  EXPECT_TRUE(out.empty());
  p.finish(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, "[DONE]");
}

TEST(SseParser, EventWithoutDataIsDropped) {
  std::vector<SseEvent> out = parse_in_pieces("event: ping\n\n: comment\n\ndata:\n\n", {});
  ASSERT_EQ(out.size(), 1u);  // only the empty data: line makes an event
  EXPECT_EQ(out[0].event, "");
  EXPECT_EQ(out[0].data, "");
}

}  // namespace
}  // namespace flashdraft::bench_serve
