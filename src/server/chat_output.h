#pragma once
// One chat choice's generated text as OpenAI message deltas: reasoning_content
// (with --reasoning-parser qwen3), content, and tool_calls (with tools and
// --tool-call-parser hermes). The same pipeline serves streamed and whole
// responses, so both say the same.
#include <climits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/reasoning_parser.h"
#include "server/request_fields.h"
#include "server/tool_call_parser.h"

namespace flashdraft::server {

class ChatOutput {
 public:
  // max_calls: tool calls past this many are left out (parallel_tool_calls false: 1).
  ChatOutput(bool parse_reasoning, bool parse_tool_calls, int max_calls = INT_MAX);

  // The "delta" objects the next piece of text yields (maybe none).
  std::vector<Json> push(std::string_view text);
  // End of the choice: what the parsers held back.
  std::vector<Json> finish();

  // The whole message so far.
  const std::string& content() const { return content_; }
  std::optional<std::string> reasoning() const;
  const std::vector<ToolCall>& tool_calls() const { return calls_; }
  const std::vector<std::string>& tool_call_ids() const { return call_ids_; }

 private:
  void add(const ReasoningDelta& d, std::vector<Json>& out, bool final);
  void add_content(std::string_view text, std::vector<Json>& out, bool final);

  bool parse_reasoning_, parse_tool_calls_;
  int max_calls_;
  ReasoningParser reasoning_parser_;
  ToolCallParser tool_parser_;
  std::string content_, reasoning_;
  std::vector<ToolCall> calls_;
  std::vector<std::string> call_ids_;
};

}  // namespace flashdraft::server
