#include "bench_serve/stream_chunk.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace flashdraft::bench_serve {
namespace {

using nlohmann::json;

constexpr size_t kMaxQuoted = 200;

std::string shortened(std::string_view text) {
  std::string s(text.substr(0, kMaxQuoted));
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > kMaxQuoted) s += "...";
  return s;
}

bool non_empty_string(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

int64_t count_in(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

bool carries_content(const json& choice) {
  if (non_empty_string(choice, "text")) return true;
  auto delta = choice.find("delta");
  if (delta == choice.end() || !delta->is_object()) return false;
  if (non_empty_string(*delta, "content") || non_empty_string(*delta, "reasoning_content") ||
      non_empty_string(*delta, "reasoning"))
    return true;
  auto calls = delta->find("tool_calls");
  return calls != delta->end() && calls->is_array() && !calls->empty();
}

std::optional<std::string> error_in(const json& j) {
  if (!j.is_object()) return std::nullopt;
  auto e = j.find("error");
  if (e != j.end() && !e->is_null()) {
    if (e->is_object()) {
      auto m = e->find("message");
      if (m != e->end() && m->is_string()) return m->get<std::string>();
      return shortened(e->dump());
    }
    if (e->is_string()) return e->get<std::string>();
    return shortened(e->dump());
  }
  // vLLM's older stream errors: {"object": "error", "message": ...}
  auto object = j.find("object");
  if (object != j.end() && *object == "error") {
    auto m = j.find("message");
    return m != j.end() && m->is_string() ? m->get<std::string>() : shortened(j.dump());
  }
  return std::nullopt;
}

}  // namespace

StreamChunk parse_stream_chunk(std::string_view event, std::string_view data) {
  StreamChunk chunk;
  if (data == "[DONE]") {
    chunk.done = true;
    return chunk;
  }
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    chunk.error = fmt::format("a stream event that is not JSON: {}", shortened(data));
    return chunk;
  }
  chunk.error = error_in(j);
  if (event == "error" && !chunk.error) chunk.error = shortened(data);
  if (chunk.error || !j.is_object()) {
    if (!chunk.error) chunk.error = fmt::format("a stream event that is not a JSON object: {}", shortened(data));
    return chunk;
  }
  auto choices = j.find("choices");
  if (choices != j.end() && choices->is_array()) {
    for (const json& choice : *choices) {
      if (!choice.is_object()) continue;
      chunk.has_content = chunk.has_content || carries_content(choice);
      auto reason = choice.find("finish_reason");
      chunk.finished = chunk.finished || (reason != choice.end() && !reason->is_null());
    }
  }
  auto usage = j.find("usage");
  if (usage != j.end() && usage->is_object()) {
    Usage u;
    u.prompt_tokens = count_in(*usage, "prompt_tokens");
    u.completion_tokens = count_in(*usage, "completion_tokens");
    chunk.usage = u;
  }
  return chunk;
}

std::string error_message_of(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded() && j.is_object()) {
    if (auto e = error_in(j)) return *e;
    auto m = j.find("message");
    if (m != j.end() && m->is_string()) return m->get<std::string>();
    auto d = j.find("detail");  // FastAPI's validation errors
    if (d != j.end()) return d->is_string() ? d->get<std::string>() : shortened(d->dump());
  }
  return body.empty() ? std::string("(empty body)") : shortened(body);
}

}  // namespace flashdraft::bench_serve
