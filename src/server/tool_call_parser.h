#pragma once
// --tool-call-parser hermes: the format Qwen3 (and Hermes models) answer
// tools in: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
// one block per call, after optional text. Text before the first call is
// the message's content; whitespace between and after calls is dropped. A
// block whose JSON is not a call object stays in the content as written, so
// nothing the model said is lost. Streaming gives the same result as parsing
// the whole completion.
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, encoded as a string (the API's shape)
};

struct ToolCallDelta {
  std::string content;
  std::vector<ToolCall> calls;  // calls completed by this piece
};

class ToolCallParser {
 public:
  ToolCallDelta push(std::string_view piece);
  // End of the completion: an unclosed last block counts when its JSON is complete.
  ToolCallDelta finish();
  int calls() const { return calls_; }

 private:
  ToolCallDelta drain(bool final);
  // Appends the call in `block` (the text between the tags) to out, or the
  // raw block to the content when it is not a call.
  void take_block(const std::string& block, bool closed, ToolCallDelta& out);

  bool in_call_ = false;
  int calls_ = 0;
  std::string held_;
};

// The whole completion at once.
ToolCallDelta parse_tool_calls(std::string_view text);

}  // namespace flashdraft::server
