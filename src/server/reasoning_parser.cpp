#include "server/reasoning_parser.h"

#include "serving/partial_match.h"

namespace flashdraft::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

}  // namespace

ReasoningDelta ReasoningParser::push(std::string_view piece) {
  held_ += piece;
  return drain(false);
}

ReasoningDelta ReasoningParser::finish() { return drain(true); }

ReasoningDelta ReasoningParser::drain(bool final) {
  ReasoningDelta out;
  if (mode_ == Mode::Undecided) {
    if (held_.starts_with(kOpen)) {
      held_.erase(0, kOpen.size());
      mode_ = Mode::Reasoning;
      saw_think_ = true;
    } else if (!final && kOpen.starts_with(held_)) {
      return out;  // could still become <think>
    } else {
      mode_ = Mode::Content;
    }
  }
  if (mode_ == Mode::Reasoning) {
    if (size_t end = held_.find(kClose); end != std::string::npos) {
      out.reasoning = held_.substr(0, end);
      held_.erase(0, end + kClose.size());
      mode_ = Mode::Content;
    } else {
      const size_t keep = final ? 0 : serving::partial_match_length(held_, kClose);
      out.reasoning = held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
  }
  out.content = std::move(held_);
  held_.clear();
  return out;
}

ReasoningSplit split_reasoning(std::string_view text) {
  ReasoningParser parser;
  ReasoningDelta all = parser.push(text);
  ReasoningDelta rest = parser.finish();
  ReasoningSplit split;
  if (parser.reasoned()) split.reasoning = all.reasoning + rest.reasoning;
  split.content = all.content + rest.content;
  return split;
}

}  // namespace flashdraft::server
