// Reading OpenAI stream chunks: content, usage, errors, [DONE].
#include "bench_serve/stream_chunk.h"

#include <gtest/gtest.h>

namespace flashdraft::bench_serve {
namespace {

TEST(StreamChunk, CompletionText) {
  StreamChunk c = parse_stream_chunk("", R"({"choices":[{"index":0,"text":" world","finish_reason":null}]})");
  EXPECT_TRUE(c.has_content);
  EXPECT_FALSE(c.finished);
  EXPECT_FALSE(c.usage);
  EXPECT_FALSE(c.error);
  EXPECT_FALSE(c.done);
}

TEST(StreamChunk, ChatDeltas) {
  EXPECT_FALSE(parse_stream_chunk("", R"({"choices":[{"delta":{"role":"assistant","content":""}}]})").has_content);
  EXPECT_TRUE(parse_stream_chunk("", R"({"choices":[{"delta":{"content":"Hi"}}]})").has_content);
  EXPECT_TRUE(parse_stream_chunk("", R"({"choices":[{"delta":{"reasoning_content":"hmm"}}]})").has_content);
  EXPECT_TRUE(parse_stream_chunk("", R"({"choices":[{"delta":{"reasoning":"hmm"}}]})").has_content);
  EXPECT_TRUE(
      parse_stream_chunk("", R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]})")
          .has_content);
  StreamChunk last = parse_stream_chunk("", R"({"choices":[{"delta":{},"finish_reason":"stop"}]})");
  EXPECT_FALSE(last.has_content);
  EXPECT_TRUE(last.finished);
}

TEST(StreamChunk, UsageChunk) {
  StreamChunk c = parse_stream_chunk(
      "", R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}})");
  ASSERT_TRUE(c.usage);
  EXPECT_EQ(c.usage->prompt_tokens, 12);
  EXPECT_EQ(c.usage->completion_tokens, 34);
  EXPECT_FALSE(c.has_content);
  EXPECT_FALSE(parse_stream_chunk("", R"({"choices":[{"text":"a"}],"usage":null})").usage);
}

TEST(StreamChunk, Done) {
  EXPECT_TRUE(parse_stream_chunk("", "[DONE]").done);
  EXPECT_FALSE(parse_stream_chunk("", "[DONE] ").done);
}

TEST(StreamChunk, Errors) {
  StreamChunk e = parse_stream_chunk("", R"({"error":{"message":"out of KV blocks","type":"server_error","code":500}})");
  ASSERT_TRUE(e.error);
  EXPECT_EQ(*e.error, "out of KV blocks");
  StreamChunk old = parse_stream_chunk("", R"({"object":"error","message":"bad","code":400})");
  ASSERT_TRUE(old.error);
  EXPECT_EQ(*old.error, "bad");
  StreamChunk typed = parse_stream_chunk("error", R"({"detail":"boom"})");
  ASSERT_TRUE(typed.error);
  EXPECT_NE(typed.error->find("boom"), std::string::npos);
  StreamChunk garbage = parse_stream_chunk("", "<html>");
  ASSERT_TRUE(garbage.error);
  EXPECT_NE(garbage.error->find("not JSON"), std::string::npos);
  EXPECT_TRUE(parse_stream_chunk("", "[1,2]").error);
}

TEST(StreamChunk, ErrorMessageOfBodies) {
  EXPECT_EQ(error_message_of(R"({"error":{"message":"model x not found","type":"NotFoundError"}})"),
            "model x not found");
  EXPECT_EQ(error_message_of(R"({"object":"error","message":"too long"})"), "too long");
  EXPECT_EQ(error_message_of(R"({"message":"plain"})"), "plain");
  EXPECT_EQ(error_message_of(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(error_message_of("Service Unavailable\n"), "Service Unavailable ");
  EXPECT_EQ(error_message_of(""), "(empty body)");
  const std::string long_body(1000, 'x');
  EXPECT_LT(error_message_of(long_body).size(), 300u);
}

}  // namespace
}  // namespace flashdraft::bench_serve
