#pragma once
// --tool-call-parser hermes: the format Qwen3 (and Hermes models) answer
// tools in: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
// one block per call, after optional text. Text before the first call is
// the message's content; whitespace between and after calls is dropped.
//
// Streamed as OpenAI streams calls: a call starts once its header
// `{"name": "...", "arguments": {` has been read, and its arguments then
// grow as the model writes them (the object's text as written, so the
// pieces add up to the whole). Only what may still turn out to be the end
// of the block is held back. A call cut off (max_tokens, or </tool_call>
// before the object closed) keeps the arguments written so far, as OpenAI
// and vLLM report a call cut off by length; what follows the arguments
// object inside the block (its closing brace, other keys) is not part of
// the message.
// A block in another shape (keys in another order, arguments as a string)
// is read whole when it closes. A block that is not a call object stays in
// the content as written, so nothing the model said is lost. Whole text
// and any split of it into pieces give the same message.
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, encoded as a string (the API's shape)
};

// One piece of a message that may call tools, in the order written.
struct ToolCallPiece {
  enum class Kind { Content, CallStart, Arguments };
  Kind kind = Kind::Content;
  int call = -1;     // CallStart, Arguments: the call's position in the message
  std::string text;  // Content: text; CallStart: the function's name; Arguments: text appended to them
};
using ToolCallDelta = std::vector<ToolCallPiece>;

// A whole message: the pieces added up.
struct ParsedToolCalls {
  std::string content;
  std::vector<ToolCall> calls;
  void add(const ToolCallDelta& delta);
};

class ToolCallParser {
 public:
  ToolCallDelta push(std::string_view piece);
  // End of the completion: what was held back.
  ToolCallDelta finish();
  int calls() const { return calls_; }

 private:
  enum class State { Text, Header, Arguments, AfterArguments, WholeBlock };
  ToolCallDelta drain(bool final);
  bool drain_text(bool final, ToolCallDelta& out);
  bool drain_header(bool final, ToolCallDelta& out);
  bool drain_arguments(bool final, ToolCallDelta& out);
  bool drain_after_arguments(bool final);
  bool drain_whole_block(bool final, ToolCallDelta& out);
  // Appends the call in `block` (the text between the tags) to out, or the
  // raw block to the content when it is not a call.
  void take_block(const std::string& block, bool closed, ToolCallDelta& out);

  State state_ = State::Text;
  int calls_ = 0;
  std::string held_;
  // In the arguments object: nesting depth and string state of the text read.
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
};

// The whole completion at once.
ParsedToolCalls parse_tool_calls(std::string_view text);

// What tool_choice "required" (function empty) or a named function puts
// after the generation prompt so the answer starts as a call:
// "<tool_call>\n", then `{"name": "NAME", "arguments":` for a named one.
// The model writes the rest; the prefix is parsed with what it writes.
std::string forced_call_prefix(std::string_view function);
// Where a forced call of a named function ends (the answer stops there: one call).
inline constexpr std::string_view kToolCallEnd = "</tool_call>";

}  // namespace flashdraft::server
