#include "server/openai_responses.h"

#include <fmt/format.h>

#include <chrono>
#include <random>

namespace flashdraft::server {

std::string random_id(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}{:016x}", prefix, rng(), rng());
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string sse_event(const Json& data) {
  // dump() escapes newlines, so the payload is one line as SSE requires.
  return "data: " + data.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

Json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"completion_tokens", completion_tokens}};
}

Json tool_call_json(const ToolCall& call, const std::string& id, std::optional<int> index) {
  Json j = Json::object();
  if (index) j["index"] = *index;
  j["id"] = id;
  j["type"] = "function";
  j["function"] = {{"name", call.name}, {"arguments", call.arguments}};
  return j;
}

Json chat_message_json(const ChoiceResult& c, const std::vector<std::string>& ids) {
  Json m = {{"role", "assistant"}};
  // OpenAI sends null content for an answer that is only tool calls.
  m["content"] = c.text.empty() && !c.tool_calls.empty() ? Json(nullptr) : Json(c.text);
  if (c.reasoning) m["reasoning_content"] = *c.reasoning;
  if (!c.tool_calls.empty()) {
    Json calls = Json::array();
    for (size_t i = 0; i < c.tool_calls.size(); ++i) calls.push_back(tool_call_json(c.tool_calls[i], ids.at(i), std::nullopt));
    m["tool_calls"] = std::move(calls);
  }
  return m;
}

namespace {

Json head(const ResponseMeta& meta, const char* object) {
  return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

}  // namespace

Json completion_body(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, const Json& usage) {
  Json j = head(meta, "text_completion");
  Json list = Json::array();
  for (const ChoiceResult& c : choices) {
    list.push_back({{"index", c.index},
                    {"text", c.text},
                    {"logprobs", c.logprobs},
                    {"finish_reason", c.finish_reason},
                    {"stop_reason", c.stop_reason}});
  }
  j["choices"] = std::move(list);
  j["usage"] = usage;
  return j;
}

Json chat_body(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
               const std::vector<std::vector<std::string>>& tool_call_ids, const Json& usage) {
  Json j = head(meta, "chat.completion");
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    list.push_back({{"index", c.index},
                    {"message", chat_message_json(c, tool_call_ids.at(i))},
                    {"logprobs", c.logprobs},
                    {"finish_reason", c.finish_reason},
                    {"stop_reason", c.stop_reason}});
  }
  j["choices"] = std::move(list);
  j["usage"] = usage;
  return j;
}

Json completion_chunk(const ResponseMeta& meta, int index, const std::string& text,
                      const std::optional<std::string>& finish_reason, const Json& stop_reason, bool include_usage,
                      const Json& logprobs) {
  Json j = head(meta, "text_completion");
  Json choice = {{"index", index}, {"text", text}, {"logprobs", logprobs}};
  choice["finish_reason"] = finish_reason ? Json(*finish_reason) : Json(nullptr);
  choice["stop_reason"] = finish_reason ? stop_reason : Json(nullptr);
  j["choices"] = Json::array({choice});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

Json chat_chunk(const ResponseMeta& meta, int index, const Json& delta, const std::optional<std::string>& finish_reason,
                const Json& stop_reason, bool include_usage, const Json& logprobs) {
  Json j = head(meta, "chat.completion.chunk");
  Json choice = {{"index", index}, {"delta", delta}, {"logprobs", logprobs}};
  choice["finish_reason"] = finish_reason ? Json(*finish_reason) : Json(nullptr);
  if (finish_reason) choice["stop_reason"] = stop_reason;
  j["choices"] = Json::array({choice});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

Json usage_chunk(const ResponseMeta& meta, bool chat, const Json& usage) {
  Json j = head(meta, chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array();
  j["usage"] = usage;
  return j;
}

}  // namespace flashdraft::server
