// Hermes tool calls (Qwen3's format), whole and streamed in pieces.
#include <gtest/gtest.h>

#include "server/tool_call_parser.h"

namespace flashdraft::server {
namespace {

using Kind = ToolCallPiece::Kind;

// Streams `text` in pieces of `size` bytes and adds the deltas up.
ParsedToolCalls streamed(const std::string& text, size_t size) {
  ToolCallParser parser;
  ParsedToolCalls all;
  for (size_t i = 0; i < text.size(); i += size) all.add(parser.push(std::string_view(text).substr(i, size)));
  all.add(parser.finish());
  return all;
}

void expect_same(const ParsedToolCalls& a, const ParsedToolCalls& b, const std::string& where) {
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
  ParsedToolCalls d = parse_tool_calls(kTwoCalls);
  EXPECT_EQ(d.content, "Let me check.\n");
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, R"({"city": "Paris", "unit": "c"})");  // as written
  EXPECT_EQ(d.calls[1].name, "get_time");
  EXPECT_EQ(d.calls[1].arguments, "{}");
}

TEST(ToolCallParser, PlainTextIsContent) {
  ParsedToolCalls d = parse_tool_calls("no tools here < tool_call");
  EXPECT_EQ(d.content, "no tools here < tool_call");
  EXPECT_TRUE(d.calls.empty());
}

TEST(ToolCallParser, MalformedCallStaysContent) {
  const std::string text = "x<tool_call>{not json}</tool_call>";
  ParsedToolCalls d = parse_tool_calls(text);
  EXPECT_EQ(d.content, text);
  EXPECT_TRUE(d.calls.empty());
  // A JSON value that is not a call object is not a call either.
  EXPECT_EQ(parse_tool_calls("<tool_call>[1]</tool_call>").content, "<tool_call>[1]</tool_call>");
  // Nor a call cut off before its arguments began.
  EXPECT_EQ(parse_tool_calls("<tool_call>{\"name\": \"f\"</tool_call>").content, "<tool_call>{\"name\": \"f\"</tool_call>");
}

TEST(ToolCallParser, UnclosedLastCall) {
  ParsedToolCalls d = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"a": 1})");
  EXPECT_EQ(d.content, "");
  // Cut off in the header: what was written is kept as content.
  d = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"argu");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "<tool_call>\n{\"name\": \"f\", \"argu");
  // Cut off in the arguments (max_tokens): the call keeps what was written, as OpenAI and vLLM report it.
  d = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, ");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "f");
  EXPECT_EQ(d.calls[0].arguments, "{\"a\": [1, ");
  EXPECT_EQ(d.content, "");
}

TEST(ToolCallParser, OtherShapesAreReadWhole) {
  ParsedToolCalls d = parse_tool_calls(R"(<tool_call>{"name": "f", "arguments": "{\"a\":1}"}</tool_call>)");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"a":1})");  // a string's content
  d = parse_tool_calls(R"(<tool_call>{"arguments": {"b": 2}, "name": "g"}</tool_call>)");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "g");
  EXPECT_EQ(d.calls[0].arguments, R"({"b":2})");
  d = parse_tool_calls(R"(<tool_call>{"name": "h"}</tool_call>)");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, "{}");
}

TEST(ToolCallParser, BracesInStringsDoNotEndTheArguments) {
  const std::string text =
      R"(<tool_call>{"name": "f", "arguments": {"code": "if (x) { return \"}\"; }", "n": [{"m": 1}]}}</tool_call>)";
  ParsedToolCalls d = parse_tool_calls(text);
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"code": "if (x) { return \"}\"; }", "n": [{"m": 1}]})");
}

TEST(ToolCallParser, StreamingEqualsWhole) {
  for (const std::string& text :
       {kTwoCalls, std::string("plain <tool text"), std::string("a<tool_call>{bad</tool_call>b"),
        std::string("<tool_call>{\"name\":\"f\"}</tool_call>  trailing words"),
        std::string("<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"</tool\"}}</tool_call>"),
        std::string("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"extra\": 2}</tool_call> after"),
        std::string("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": </tool_call>x"),
        std::string("<tool_call>\n{\"name\": \"f\\\"q\", \"arguments\": {\"a\": \"\\\\\"}}")}) {
    const ParsedToolCalls whole = parse_tool_calls(text);
    for (size_t size = 1; size <= 13; ++size) expect_same(streamed(text, size), whole, text + " / " + std::to_string(size));
  }
}

TEST(ToolCallParser, StreamsArgumentsAsTheyAreWritten) {
  ToolCallParser parser;
  ToolCallDelta d = parser.push("Hello <tool");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text, "Hello ");  // "<tool" could start a call
  EXPECT_TRUE(parser.push("_call>\n{\"name\": \"get_weather\", \"arguments\": ").empty());  // the header is not done
  d = parser.push("{\"ci");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, Kind::CallStart);
  EXPECT_EQ(d[0].call, 0);
  EXPECT_EQ(d[0].text, "get_weather");
  EXPECT_EQ(d[1].kind, Kind::Arguments);
  EXPECT_EQ(d[1].text, "{\"ci");
  d = parser.push("ty\": \"<b>Par");  // a "<" that cannot start the end tag goes at once
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text, "ty\": \"<b>Par");
  d = parser.push("is</");  // "</" could start </tool_call>: held
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text, "is");
  d = parser.push("b>\"}}\n</tool_call>\n<tool_call>{\"name\": \"g\", \"arguments\": {}}");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].text, "</b>\"}");  // the object's last brace; the call's own brace is not part of it
  EXPECT_EQ(d[1].kind, Kind::CallStart);
  EXPECT_EQ(d[1].call, 1);
  EXPECT_EQ(d[2].text, "{}");
  EXPECT_TRUE(parser.finish().empty());
  EXPECT_EQ(parser.calls(), 2);
}

TEST(ToolCallParser, ForcedPrefixes) {
  EXPECT_EQ(forced_call_prefix(""), "<tool_call>\n");
  EXPECT_EQ(forced_call_prefix("say \"hi\""), "<tool_call>\n{\"name\": \"say \\\"hi\\\"\", \"arguments\":");
  // The prefix and what the model writes after it parse as one call.
  ParsedToolCalls d = parse_tool_calls(forced_call_prefix("get_weather") + " {\"city\": \"Paris\"}}\n");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(d.calls[0].arguments, "{\"city\": \"Paris\"}");
  // A model that does not complete the call: its text, prefix included, is the content.
  d = parse_tool_calls(forced_call_prefix("") + "I cannot.");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "<tool_call>\nI cannot.");
}

}  // namespace
}  // namespace flashdraft::server
