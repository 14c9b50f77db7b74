#include "server/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include "serving/partial_match.h"

namespace flashdraft::server {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = kToolCallEnd;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool all_space(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

void add_piece(ToolCallDelta& out, ToolCallPiece::Kind kind, int call, std::string_view text) {
  using Kind = ToolCallPiece::Kind;
  if (kind != Kind::CallStart && text.empty()) return;
  if (kind != Kind::CallStart && !out.empty() && out.back().kind == kind && out.back().call == call) {
    out.back().text += text;
    return;
  }
  out.push_back({kind, call, std::string(text)});
}

// The streamable start of a call: `{"name": "<name>", "arguments": {`.
enum class Scan { Incomplete, Mismatch, Matched };
struct Header {
  Scan scan = Scan::Incomplete;
  std::string name;
  size_t arguments_at = 0;  // where the arguments object's "{" is
};

Header scan_header(std::string_view s) {
  auto stop = [](Scan scan) { return Header{scan, {}, 0}; };
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size() && is_space(s[i])) ++i;
  };
  // The literal at i: Matched (and consumed), Incomplete (s ends inside it) or Mismatch.
  auto literal = [&](std::string_view lit) {
    const size_t n = std::min(lit.size(), s.size() - i);
    if (s.substr(i, n) != lit.substr(0, n)) return Scan::Mismatch;
    if (n < lit.size()) return Scan::Incomplete;
    i += n;
    return Scan::Matched;
  };
  Header h;
  for (std::string_view lit : {"{", "\"name\"", ":"}) {
    skip_space();
    if (Scan r = literal(lit); r != Scan::Matched) return stop(r);
  }
  skip_space();
  if (i == s.size()) return stop(Scan::Incomplete);
  if (s[i] != '"') return stop(Scan::Mismatch);
  size_t end = i + 1;
  while (end < s.size() && s[end] != '"') end += s[end] == '\\' ? 2 : 1;
  if (end >= s.size()) return stop(Scan::Incomplete);
  const auto name = nlohmann::json::parse(s.substr(i, end + 1 - i), nullptr, /*allow_exceptions=*/false);
  if (!name.is_string()) return stop(Scan::Mismatch);
  h.name = name.get<std::string>();
  i = end + 1;
  for (std::string_view lit : {",", "\"arguments\"", ":", "{"}) {
    skip_space();
    if (Scan r = literal(lit); r != Scan::Matched) return stop(r);
  }
  h.scan = Scan::Matched;
  h.arguments_at = i - 1;
  return h;
}

}  // namespace

void ParsedToolCalls::add(const ToolCallDelta& delta) {
  for (const ToolCallPiece& p : delta) {
    switch (p.kind) {
      case ToolCallPiece::Kind::Content: content += p.text; break;
      case ToolCallPiece::Kind::CallStart: calls.push_back({p.text, ""}); break;
      case ToolCallPiece::Kind::Arguments: calls.at(static_cast<size_t>(p.call)).arguments += p.text; break;
    }
  }
}

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
    add_piece(out, ToolCallPiece::Kind::Content, -1,
              std::string(kOpen) + block + (closed ? std::string(kClose) : std::string()));
    return;
  }
  std::string arguments = "{}";
  if (call.contains("arguments")) {
    arguments = call["arguments"].is_string()
                    ? call["arguments"].get<std::string>()
                    : call["arguments"].dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  add_piece(out, ToolCallPiece::Kind::CallStart, calls_, call["name"].get<std::string>());
  add_piece(out, ToolCallPiece::Kind::Arguments, calls_, arguments);
  ++calls_;
}

bool ToolCallParser::drain_text(bool final, ToolCallDelta& out) {
  const size_t start = held_.find(kOpen);
  if (start != std::string::npos) {
    const std::string_view before = std::string_view(held_).substr(0, start);
    if (calls_ == 0 || !all_space(before)) add_piece(out, ToolCallPiece::Kind::Content, -1, before);
    held_.erase(0, start + kOpen.size());
    state_ = State::Header;
    return true;
  }
  // No call starts in what is held: release all of it but a possible
  // start of "<tool_call>". After a call, whitespace waits to see whether
  // another call follows.
  const size_t keep = final ? 0 : serving::partial_match_length(held_, kOpen);
  const std::string_view release = std::string_view(held_).substr(0, held_.size() - keep);
  if (calls_ > 0 && all_space(release)) {
    if (final) held_.clear();
    return false;
  }
  add_piece(out, ToolCallPiece::Kind::Content, -1, release);
  held_.erase(0, release.size());
  return false;
}

bool ToolCallParser::drain_header(bool final, ToolCallDelta& out) {
  const Header h = scan_header(held_);
  if (h.scan == Scan::Matched) {
    add_piece(out, ToolCallPiece::Kind::CallStart, calls_, h.name);
    held_.erase(0, h.arguments_at);
    depth_ = 0;
    in_string_ = escaped_ = false;
    state_ = State::Arguments;
    return true;
  }
  // Another shape, or a block that ends before its header does: read it whole.
  if (h.scan == Scan::Mismatch || final || held_.find(kClose) != std::string::npos) {
    state_ = State::WholeBlock;
    return true;
  }
  return false;
}

bool ToolCallParser::drain_arguments(bool final, ToolCallDelta& out) {
  size_t i = 0;
  for (; i < held_.size(); ++i) {
    const char c = held_[i];
    if (c == '<') {
      // The block's end tag ends the call even inside an unclosed object or
      // string (the model stopped writing it); part of the tag waits.
      if (held_.compare(i, kClose.size(), kClose) == 0) {
        add_piece(out, ToolCallPiece::Kind::Arguments, calls_, std::string_view(held_).substr(0, i));
        held_.erase(0, i + kClose.size());
        ++calls_;
        state_ = State::Text;
        return true;
      }
      if (!final && held_.size() - i < kClose.size() &&
          std::string_view(held_).substr(i) == kClose.substr(0, held_.size() - i)) {
        break;
      }
    }
    if (in_string_) {
      if (escaped_) escaped_ = false;
      else if (c == '\\') escaped_ = true;
      else if (c == '"') in_string_ = false;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && --depth_ == 0) {
      add_piece(out, ToolCallPiece::Kind::Arguments, calls_, std::string_view(held_).substr(0, i + 1));
      held_.erase(0, i + 1);
      ++calls_;
      state_ = State::AfterArguments;
      return true;
    }
  }
  add_piece(out, ToolCallPiece::Kind::Arguments, calls_, std::string_view(held_).substr(0, i));
  held_.erase(0, i);
  if (final) {
    ++calls_;
    state_ = State::Text;
  }
  return false;
}

bool ToolCallParser::drain_after_arguments(bool final) {
  const size_t end = held_.find(kClose);
  if (end != std::string::npos) {
    held_.erase(0, end + kClose.size());
    state_ = State::Text;
    return true;
  }
  // The rest of the block is not part of the message; only a possible start of the end tag waits.
  held_.erase(0, held_.size() - (final ? 0 : serving::partial_match_length(held_, kClose)));
  if (final) state_ = State::Text;
  return false;
}

bool ToolCallParser::drain_whole_block(bool final, ToolCallDelta& out) {
  const size_t end = held_.find(kClose);
  if (end == std::string::npos) {
    if (!final) return false;
    take_block(held_, false, out);
    held_.clear();
    state_ = State::Text;
    return false;
  }
  take_block(held_.substr(0, end), true, out);
  held_.erase(0, end + kClose.size());
  state_ = State::Text;
  return true;
}

ToolCallDelta ToolCallParser::drain(bool final) {
  ToolCallDelta out;
  for (bool more = true; more;) {
    switch (state_) {
      case State::Text: more = drain_text(final, out); break;
      case State::Header: more = drain_header(final, out); break;
      case State::Arguments: more = drain_arguments(final, out); break;
      case State::AfterArguments: more = drain_after_arguments(final); break;
      case State::WholeBlock: more = drain_whole_block(final, out); break;
    }
  }
  return out;
}

ParsedToolCalls parse_tool_calls(std::string_view text) {
  ToolCallParser parser;
  ParsedToolCalls all;
  all.add(parser.push(text));
  all.add(parser.finish());
  return all;
}

std::string forced_call_prefix(std::string_view function) {
  std::string prefix = std::string(kOpen) + "\n";
  // No space after the last colon: BPE tokenizers join it to the "{" that
  // follows, so the model goes on as it would have written the call itself.
  if (!function.empty()) prefix += "{\"name\": " + nlohmann::json(std::string(function)).dump() + ", \"arguments\":";
  return prefix;
}

}  // namespace flashdraft::server
