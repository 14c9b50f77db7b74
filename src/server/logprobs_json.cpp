#include "server/logprobs_json.h"

#include <algorithm>

namespace flashdraft::server {
namespace {

double clamp_logprob(float lp) { return std::max(static_cast<double>(lp), -9999.0); }

// Ids past the tokenizer's vocabulary (padded embeddings) have no text.
std::string token_text(const tokenizer::Tokenizer& tok, int32_t id) {
  if (id < 0 || id >= tok.vocab_size()) return "";
  const int32_t one[1] = {id};
  return tok.decode(one);
}

Json token_bytes(const tokenizer::Tokenizer& tok, int32_t id) {
  Json bytes = Json::array();
  if (id < 0 || id >= tok.vocab_size()) return bytes;
  for (unsigned char c : tok.token_bytes(id)) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// Characters as OpenAI (and Python's len) count them: code points.
int64_t characters(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

}  // namespace

Json completion_logprobs(const std::vector<engine::TokenLogprobs>& tokens, const tokenizer::Tokenizer& tok,
                         int64_t& text_offset) {
  Json offsets = Json::array(), logprobs = Json::array(), strings = Json::array(), tops = Json::array();
  for (const engine::TokenLogprobs& t : tokens) {
    const std::string text = token_text(tok, t.token);
    offsets.push_back(text_offset);
    text_offset += characters(text);
    logprobs.push_back(clamp_logprob(t.logprob));
    strings.push_back(text);
    Json top = Json::object();  // the emitted token first, then the most likely; a repeated string keeps its first
    top[text] = clamp_logprob(t.logprob);
    for (const engine::TopLogprob& alt : t.top) {
      const std::string s = token_text(tok, alt.token);
      if (!top.contains(s)) top[s] = clamp_logprob(alt.logprob);
    }
    tops.push_back(std::move(top));
  }
  return {{"text_offset", std::move(offsets)},
          {"token_logprobs", std::move(logprobs)},
          {"tokens", std::move(strings)},
          {"top_logprobs", std::move(tops)}};
}

Json chat_logprobs(const std::vector<engine::TokenLogprobs>& tokens, const tokenizer::Tokenizer& tok) {
  Json content = Json::array();
  for (const engine::TokenLogprobs& t : tokens) {
    Json top = Json::array();
    for (const engine::TopLogprob& alt : t.top) {
      top.push_back({{"token", token_text(tok, alt.token)},
                     {"logprob", clamp_logprob(alt.logprob)},
                     {"bytes", token_bytes(tok, alt.token)}});
    }
    content.push_back({{"token", token_text(tok, t.token)},
                       {"logprob", clamp_logprob(t.logprob)},
                       {"bytes", token_bytes(tok, t.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

}  // namespace flashdraft::server
