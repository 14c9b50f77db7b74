#pragma once
// Response bodies and server-sent-event chunks shaped as OpenAI's API shapes
// them (text_completion, chat.completion, chat.completion.chunk), with
// vLLM's additions (stop_reason, reasoning_content).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/request_fields.h"
#include "server/tool_call_parser.h"

namespace flashdraft::server {

// "cmpl-" / "chatcmpl-" / "chatcmpl-tool-" followed by 32 random hex digits.
std::string random_id(std::string_view prefix);
int64_t unix_seconds();

// One server-sent event carrying `data`: "data: <json>\n\n".
std::string sse_event(const Json& data);
// The event that ends every stream.
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// What every body and chunk of one response shares.
struct ResponseMeta {
  std::string id;
  int64_t created = 0;
  std::string model;
};

Json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

struct ChoiceResult {
  int index = 0;
  std::string text;  // completions: the text; chat: the content
  std::optional<std::string> reasoning;  // chat with a reasoning parser
  std::vector<ToolCall> tool_calls;      // chat with a tool-call parser
  std::string finish_reason;             // stop, length, tool_calls, abort
  Json stop_reason = nullptr;            // the stop string or stop token id that ended it (vLLM)
  Json logprobs = nullptr;               // logprobs_json's object, when the request asked
};

// tool_calls[i] of a message or delta; `index` only in streamed deltas.
Json tool_call_json(const ToolCall& call, const std::string& id, std::optional<int> index);
// ids: one per tool call of the choice, in order.
Json chat_message_json(const ChoiceResult& choice, const std::vector<std::string>& tool_call_ids);

Json completion_body(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, const Json& usage);
Json chat_body(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
               const std::vector<std::vector<std::string>>& tool_call_ids, const Json& usage);

// Streamed chunks. With include_usage every chunk carries "usage": null and
// the stream ends with a usage_chunk (choices: []), as OpenAI does.
// logprobs: of the chunk's tokens (logprobs_json), else null.
Json completion_chunk(const ResponseMeta& meta, int index, const std::string& text,
                      const std::optional<std::string>& finish_reason, const Json& stop_reason, bool include_usage,
                      const Json& logprobs = nullptr);
Json chat_chunk(const ResponseMeta& meta, int index, const Json& delta, const std::optional<std::string>& finish_reason,
                const Json& stop_reason, bool include_usage, const Json& logprobs = nullptr);
Json usage_chunk(const ResponseMeta& meta, bool chat, const Json& usage);

}  // namespace flashdraft::server
