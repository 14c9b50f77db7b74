// Hermes tool calls (Qwen3's format), whole and streamed in pieces.
#include <gtest/gtest.h>

#include "server/tool_call_parser.h"

namespace flashdraft::server {
namespace {

// Streams `text` in pieces of `size` bytes and adds the deltas up.
ToolCallDelta streamed(const std::string& text, size_t size) {
  ToolCallParser parser;
  ToolCallDelta all;
  auto add = [&](ToolCallDelta d) {
    all.content += d.content;
    for (auto& c : d.calls) all.calls.push_back(c);
  };
  for (size_t i = 0; i < text.size(); i += size) add(parser.push(std::string_view(text).substr(i, size)));
  add(parser.finish());
  return all;
}

void expect_same(const ToolCallDelta& a, const ToolCallDelta& b, const std::string& where) {
  EXPECT_EQ(a.content, b.content) << where;
  ASSERT_EQ(a.calls.size(), b.calls.size()) << where;
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].name, b.calls[i].name) << where;
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments) << where;
  }
}

const std::string kTwoCalls =
    "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n"
    "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

TEST(ToolCallParser, ParsesCallsAndLeadingContent) {
  ToolCallDelta d = parse_tool_calls(kTwoCalls);
  EXPECT_EQ(d.content, "Let me check.\n");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","unit":"c"})");  // key order kept
  EXPECT_EQ(d.calls[1].name, "get_time");
  EXPECT_EQ(d.calls[1].arguments, "{}");
}

TEST(ToolCallParser, PlainTextIsContent) {
  ToolCallDelta d = parse_tool_calls("no tools here < tool_call");
  EXPECT_EQ(d.content, "no tools here < tool_call");
  EXPECT_TRUE(d.calls.empty());
}

TEST(ToolCallParser, MalformedCallStaysContent) {
  const std::string text = "x<tool_call>{not json}</tool_call>";
  ToolCallDelta d = parse_tool_calls(text);
  EXPECT_EQ(d.content, text);
  EXPECT_TRUE(d.calls.empty());
  // A JSON value that is not a call object is not a call either.
  EXPECT_EQ(parse_tool_calls("<tool_call>[1]</tool_call>").content, "<tool_call>[1]</tool_call>");
}

TEST(ToolCallParser, UnclosedLastCallCountsWhenComplete) {
  ToolCallDelta d = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(d.content, "");
  // Cut off mid-JSON: what was written is kept as content.
  d = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"argu");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "<tool_call>\n{\"name\": \"f\", \"argu");
}

TEST(ToolCallParser, StringArgumentsPassThrough) {
  ToolCallDelta d = parse_tool_calls(R"(<tool_call>{"name": "f", "arguments": "{\"a\":1}"}</tool_call>)");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"a":1})");
}

TEST(ToolCallParser, StreamingEqualsWhole) {
  for (const std::string& text : {kTwoCalls, std::string("plain <tool text"), std::string("a<tool_call>{bad</tool_call>b"),
                                  std::string("<tool_call>{\"name\":\"f\"}</tool_call>  trailing words")}) {
    const ToolCallDelta whole = parse_tool_calls(text);
    for (size_t size = 1; size <= 13; ++size) expect_same(streamed(text, size), whole, text + " / " + std::to_string(size));
  }
}

TEST(ToolCallParser, StreamingReleasesContentBeforeTheCallEnds) {
  ToolCallParser parser;
  EXPECT_EQ(parser.push("Hello <tool").content, "Hello ");  // "<tool" could start a call
  ToolCallDelta d = parser.push("_call>{\"name\": \"f\", \"arguments\": {}}");
  EXPECT_EQ(d.content, "");
  EXPECT_TRUE(d.calls.empty());  // not closed yet
  d = parser.push("</tool_call>");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "f");
}

}  // namespace
}  // namespace flashdraft::server
