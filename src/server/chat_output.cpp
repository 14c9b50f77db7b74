#include "server/chat_output.h"

#include "server/openai_responses.h"

namespace flashdraft::server {

ChatOutput::ChatOutput(bool parse_reasoning, bool parse_tool_calls)
    : parse_reasoning_(parse_reasoning), parse_tool_calls_(parse_tool_calls) {}

std::optional<std::string> ChatOutput::reasoning() const {
  if (!parse_reasoning_ || !reasoning_parser_.reasoned()) return std::nullopt;
  return reasoning_;
}

void ChatOutput::add_content(std::string_view text, std::vector<Json>& out, bool final) {
  if (!parse_tool_calls_) {
    if (!text.empty()) {
      content_ += text;
      out.push_back({{"content", std::string(text)}});
    }
    return;
  }
  ToolCallDelta d = tool_parser_.push(text);
  if (final) {
    ToolCallDelta rest = tool_parser_.finish();
    d.content += rest.content;
    for (ToolCall& c : rest.calls) d.calls.push_back(std::move(c));
  }
  if (!d.content.empty()) {
    content_ += d.content;
    out.push_back({{"content", d.content}});
  }
  for (ToolCall& call : d.calls) {
    const int index = static_cast<int>(calls_.size());
    call_ids_.push_back(random_id("chatcmpl-tool-"));
    out.push_back({{"tool_calls", Json::array({tool_call_json(call, call_ids_.back(), index)})}});
    calls_.push_back(std::move(call));
  }
}

void ChatOutput::add(const ReasoningDelta& d, std::vector<Json>& out, bool final) {
  if (!d.reasoning.empty()) {
    reasoning_ += d.reasoning;
    out.push_back({{"reasoning_content", d.reasoning}});
  }
  add_content(d.content, out, final);
}

std::vector<Json> ChatOutput::push(std::string_view text) {
  std::vector<Json> out;
  if (parse_reasoning_) {
    add(reasoning_parser_.push(text), out, false);
  } else {
    add_content(text, out, false);
  }
  return out;
}

std::vector<Json> ChatOutput::finish() {
  std::vector<Json> out;
  if (parse_reasoning_) {
    add(reasoning_parser_.finish(), out, true);
  } else {
    add_content("", out, true);
  }
  return out;
}

}  // namespace flashdraft::server
