// Qwen3 reasoning: <think>...</think> into reasoning_content, whole and streamed.
#include <gtest/gtest.h>

#include "server/reasoning_parser.h"

namespace flashdraft::server {
namespace {

TEST(ReasoningParser, SplitsThinkBlock) {
  ReasoningSplit s = split_reasoning("<think>\nstep 1\n</think>\n\nThe answer is 4.");
  ASSERT_TRUE(s.reasoning);
  EXPECT_EQ(*s.reasoning, "\nstep 1\n");
  EXPECT_EQ(s.content, "\n\nThe answer is 4.");
}

TEST(ReasoningParser, NoThinkBlockIsAllContent) {
  ReasoningSplit s = split_reasoning("The answer is 4. </think> stays");
  EXPECT_FALSE(s.reasoning);
  EXPECT_EQ(s.content, "The answer is 4. </think> stays");
}

TEST(ReasoningParser, UnclosedThinkIsAllReasoning) {
  ReasoningSplit s = split_reasoning("<think>still thinking");
  ASSERT_TRUE(s.reasoning);
  EXPECT_EQ(*s.reasoning, "still thinking");
  EXPECT_EQ(s.content, "");
}

TEST(ReasoningParser, EmptyThinkBlockGivesEmptyReasoning) {
  ReasoningSplit s = split_reasoning("<think></think>hi");
  ASSERT_TRUE(s.reasoning);
  EXPECT_EQ(*s.reasoning, "");
  EXPECT_EQ(s.content, "hi");
}

TEST(ReasoningParser, StreamingEqualsWhole) {
  for (const std::string text : {"<think>\nabc </thin k> d\n</think>\n\nanswer </think>", "<thinkX> no", "<thi",
                                 "plain answer", "<think>cut off </thi"}) {
    const ReasoningSplit whole = split_reasoning(text);
    for (size_t size = 1; size <= 9; ++size) {
      ReasoningParser parser;
      std::string reasoning, content;
      for (size_t i = 0; i < text.size(); i += size) {
        ReasoningDelta d = parser.push(std::string_view(text).substr(i, size));
        reasoning += d.reasoning;
        content += d.content;
      }
      ReasoningDelta d = parser.finish();
      reasoning += d.reasoning;
      content += d.content;
      EXPECT_EQ(reasoning, whole.reasoning.value_or("")) << text << " / " << size;
      EXPECT_EQ(content, whole.content) << text << " / " << size;
      EXPECT_EQ(parser.reasoned(), whole.reasoning.has_value()) << text;
    }
  }
}

TEST(ReasoningParser, StreamingReleasesReasoningEarly) {
  ReasoningParser parser;
  EXPECT_EQ(parser.push("<thi").reasoning, "");
  ReasoningDelta d = parser.push("nk>let me see </th");
  EXPECT_EQ(d.reasoning, "let me see ");  // "</th" could be the end marker
  d = parser.push("ink>ok");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "ok");
}

}  // namespace
}  // namespace flashdraft::server
