#pragma once
// One SSE event of an OpenAI streaming response, read the same way for
// /v1/completions (choices[].text) and /v1/chat/completions
// (choices[].delta.content, .reasoning_content / .reasoning, .tool_calls).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace flashdraft::bench_serve {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

struct StreamChunk {
  bool done = false;          // `data: [DONE]`
  bool has_content = false;   // carries generated output (text, reasoning or a tool-call delta)
  bool finished = false;      // a choice has a finish_reason
  std::optional<Usage> usage;
  std::optional<std::string> error;  // the server reported an error in the stream
};

// event: the SSE event type ("error" marks an error whatever the payload).
// A payload that is not JSON is an error chunk naming what came.
StreamChunk parse_stream_chunk(std::string_view event, std::string_view data);

// The message of an OpenAI-style error body ({"error": {"message": ...}},
// {"message": ...}, {"detail": ...}); otherwise the body itself, shortened.
std::string error_message_of(std::string_view body);

}  // namespace flashdraft::bench_serve
