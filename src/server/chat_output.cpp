#include "server/chat_output.h"

#include <iterator>

#include "server/openai_responses.h"

namespace flashdraft::server {

ChatOutput::ChatOutput(bool parse_reasoning, bool parse_tool_calls, int max_calls)
    : parse_reasoning_(parse_reasoning), parse_tool_calls_(parse_tool_calls), max_calls_(max_calls) {}

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
    d.insert(d.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  }
  for (const ToolCallPiece& p : d) {
    if (p.kind != ToolCallPiece::Kind::Content && p.call >= max_calls_) continue;
    switch (p.kind) {
      case ToolCallPiece::Kind::Content:
        content_ += p.text;
        out.push_back({{"content", p.text}});
        break;
      case ToolCallPiece::Kind::CallStart: {
        // As OpenAI streams a call: its id, type and name first, with empty arguments.
        call_ids_.push_back(random_id("chatcmpl-tool-"));
        calls_.push_back({p.text, ""});
        Json start = tool_call_json(calls_.back(), call_ids_.back(), p.call);
        out.push_back({{"tool_calls", Json::array({std::move(start)})}});
        break;
      }
      case ToolCallPiece::Kind::Arguments:
        calls_.at(static_cast<size_t>(p.call)).arguments += p.text;
        out.push_back({{"tool_calls", Json::array({{{"index", p.call}, {"function", {{"arguments", p.text}}}}})}});
        break;
    }
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
