// One chat choice's text as OpenAI message deltas: tool calls streamed in
// pieces add up to the whole message, and parallel_tool_calls false keeps the first call.
#include <gtest/gtest.h>

#include "server/chat_output.h"

namespace flashdraft::server {
namespace {

const std::string kTwoCalls =
    "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"b\": [2]}}\n</tool_call>";

// Pushes `text` in pieces of `size` bytes; returns every delta.
std::vector<Json> deltas(ChatOutput& o, const std::string& text, size_t size) {
  std::vector<Json> all;
  for (size_t i = 0; i < text.size(); i += size) {
    for (Json& d : o.push(std::string_view(text).substr(i, size))) all.push_back(std::move(d));
  }
  for (Json& d : o.finish()) all.push_back(std::move(d));
  return all;
}

TEST(ChatOutput, StreamedCallDeltasAddUpToTheMessage) {
  for (size_t size : {1, 3, 7, 1000}) {
    ChatOutput o(false, true);
    std::vector<Json> calls;
    for (const Json& d : deltas(o, kTwoCalls, size)) {
      ASSERT_TRUE(d.contains("tool_calls")) << d.dump();
      const Json& c = d["tool_calls"][0];
      const size_t index = c["index"].get<size_t>();
      if (c.contains("id")) {
        ASSERT_EQ(index, calls.size());
        EXPECT_EQ(c["function"]["arguments"], "");
        calls.push_back({{"id", c["id"]}, {"name", c["function"]["name"]}, {"arguments", ""}});
      } else {
        ASSERT_LT(index, calls.size());
        calls[index]["arguments"] = calls[index]["arguments"].get<std::string>() + c["function"]["arguments"].get<std::string>();
      }
    }
    ASSERT_EQ(calls.size(), 2u) << size;
    ASSERT_EQ(o.tool_calls().size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(calls[i]["name"], o.tool_calls()[i].name);
      EXPECT_EQ(calls[i]["arguments"], o.tool_calls()[i].arguments);
      EXPECT_EQ(calls[i]["id"], o.tool_call_ids()[i]);
    }
    EXPECT_EQ(o.tool_calls()[1].arguments, "{\"b\": [2]}");
    EXPECT_EQ(o.content(), "");
  }
}

TEST(ChatOutput, ParallelToolCallsFalseKeepsTheFirst) {
  ChatOutput o(false, true, /*max_calls=*/1);
  for (const Json& d : deltas(o, kTwoCalls, 5)) EXPECT_EQ(d["tool_calls"][0]["index"], 0) << d.dump();
  ASSERT_EQ(o.tool_calls().size(), 1u);
  EXPECT_EQ(o.tool_calls()[0].name, "f");
}

}  // namespace
}  // namespace flashdraft::server
