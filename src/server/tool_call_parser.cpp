#include "server/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include "serving/partial_match.h"

namespace flashdraft::server {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

bool all_space(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

}  // namespace

ToolCallDelta ToolCallParser::push(std::string_view piece) {
  held_ += piece;
  return drain(false);
}

ToolCallDelta ToolCallParser::finish() { return drain(true); }

void ToolCallParser::take_block(const std::string& block, bool closed, ToolCallDelta& out) {
  using Json = nlohmann::ordered_json;
  Json call = Json::parse(block, nullptr, /*allow_exceptions=*/false);
  const bool ok = call.is_object() && call.contains("name") && call["name"].is_string() &&
                  (!call.contains("arguments") || call["arguments"].is_object() || call["arguments"].is_string());
  if (!ok) {
    out.content += std::string(kOpen) + block + (closed ? std::string(kClose) : std::string());
    return;
  }
  ToolCall c;
  c.name = call["name"].get<std::string>();
  if (!call.contains("arguments")) {
    c.arguments = "{}";
  } else if (call["arguments"].is_string()) {
    c.arguments = call["arguments"].get<std::string>();
  } else {
    c.arguments = call["arguments"].dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  out.calls.push_back(std::move(c));
  ++calls_;
}

ToolCallDelta ToolCallParser::drain(bool final) {
  ToolCallDelta out;
  for (;;) {
    if (in_call_) {
      const size_t end = held_.find(kClose);
      if (end == std::string::npos) {
        if (final) {
          take_block(held_, false, out);
          held_.clear();
          in_call_ = false;
        }
        return out;
      }
      take_block(held_.substr(0, end), true, out);
      held_.erase(0, end + kClose.size());
      in_call_ = false;
      continue;
    }
    const size_t start = held_.find(kOpen);
    if (start != std::string::npos) {
      const std::string before = held_.substr(0, start);
      if (calls_ == 0 || !all_space(before)) out.content += before;
      held_.erase(0, start + kOpen.size());
      in_call_ = true;
      continue;
    }
    // No call starts in what is held: release all of it but a possible
    // start of "<tool_call>". After a call, whitespace waits to see whether
    // another call follows.
    size_t keep = final ? 0 : serving::partial_match_length(held_, kOpen);
    if (calls_ > 0 && all_space(std::string_view(held_).substr(0, held_.size() - keep))) {
      if (final) held_.clear();
      return out;
    }
    out.content += held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
}

ToolCallDelta parse_tool_calls(std::string_view text) {
  ToolCallParser parser;
  ToolCallDelta all = parser.push(text);
  ToolCallDelta rest = parser.finish();
  all.content += rest.content;
  for (ToolCall& c : rest.calls) all.calls.push_back(std::move(c));
  return all;
}

}  // namespace flashdraft::server
