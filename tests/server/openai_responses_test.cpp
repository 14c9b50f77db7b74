// Bodies and SSE chunks in OpenAI's shapes.
#include <gtest/gtest.h>

#include "server/openai_responses.h"

namespace flashdraft::server {
namespace {

const ResponseMeta kMeta{"cmpl-1", 1700000000, "m"};

TEST(Sse, OneEventPerLineEndingInABlankLine) {
  Json j = {{"text", "two\nlines"}};
  std::string event = sse_event(j);
  EXPECT_EQ(event, "data: {\"text\":\"two\\nlines\"}\n\n");
  EXPECT_EQ(event.find('\n'), event.size() - 2);  // the payload itself never breaks the line
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(Sse, InvalidUtf8NeverBreaksTheStream) {
  std::string event = sse_event(Json{{"text", std::string("a\xff")}});
  EXPECT_EQ(event.rfind("data: ", 0), 0u);
  EXPECT_TRUE(Json::parse(event.substr(6), nullptr, false).is_object());
}

TEST(Ids, PrefixedAndRandom) {
  std::string a = random_id("chatcmpl-"), b = random_id("chatcmpl-");
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 9u + 32u);
  EXPECT_NE(a, b);
}

TEST(CompletionBody, Shape) {
  ChoiceResult c;
  c.text = "hello";
  c.finish_reason = "stop";
  c.stop_reason = "\n";
  Json j = completion_body(kMeta, {c}, usage_json(3, 2));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"], "cmpl-1");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["choices"][0]["text"], "hello");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["stop_reason"], "\n");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"], Json::parse(R"({"prompt_tokens":3,"total_tokens":5,"completion_tokens":2})"));
}

TEST(ChatBody, ContentReasoningAndToolCalls) {
  ChoiceResult c;
  c.reasoning = "think";
  c.tool_calls = {{"f", R"({"a":1})"}};
  c.finish_reason = "tool_calls";
  Json j = chat_body(kMeta, {c}, {{"chatcmpl-tool-1"}}, usage_json(1, 1));
  EXPECT_EQ(j["object"], "chat.completion");
  const Json& m = j["choices"][0]["message"];
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_TRUE(m["content"].is_null());  // only tool calls: null content, as OpenAI
  EXPECT_EQ(m["reasoning_content"], "think");
  EXPECT_EQ(m["tool_calls"][0],
            Json::parse(R"({"id":"chatcmpl-tool-1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}})"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");

  ChoiceResult plain;
  plain.text = "";
  plain.finish_reason = "length";
  Json p = chat_body(kMeta, {plain}, {{}}, usage_json(1, 0));
  EXPECT_EQ(p["choices"][0]["message"]["content"], "");  // text answers keep a string, even empty
  EXPECT_FALSE(p["choices"][0]["message"].contains("tool_calls"));
  EXPECT_FALSE(p["choices"][0]["message"].contains("reasoning_content"));
}

TEST(Chunks, ChatDeltaAndFinish) {
  Json first = chat_chunk(kMeta, 1, {{"role", "assistant"}, {"content", ""}}, std::nullopt, nullptr, false);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["index"], 1);
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  Json last = chat_chunk(kMeta, 1, Json::object(), "stop", nullptr, true);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(last["choices"][0]["delta"].is_object());
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_TRUE(last.contains("usage"));
  EXPECT_TRUE(last["usage"].is_null());
}

TEST(Chunks, CompletionAndUsage) {
  Json c = completion_chunk(kMeta, 0, "abc", std::nullopt, nullptr, false);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "abc");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  Json u = usage_chunk(kMeta, true, usage_json(4, 6));
  EXPECT_EQ(u["object"], "chat.completion.chunk");
  EXPECT_TRUE(u["choices"].is_array());
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 10);
}

TEST(ToolCallJson, StreamedDeltasCarryTheIndex) {
  Json j = tool_call_json({"f", "{}"}, "id1", 2);
  EXPECT_EQ(j["index"], 2);
  EXPECT_EQ(j["function"]["name"], "f");
  EXPECT_FALSE(tool_call_json({"f", "{}"}, "id1", std::nullopt).contains("index"));
}

}  // namespace
}  // namespace flashdraft::server
