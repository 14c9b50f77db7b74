#pragma once
// The bodies of POST /v1/completions and /v1/chat/completions, parsed and
// checked field by field as vLLM's OpenAI server reads them. Anything wrong
// or unsupported is an ApiError 400 that names the field.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "server/request_fields.h"
#include "serving/generation_defaults.h"

namespace flashdraft::server {

// Sampling and stopping as the request gave them (absent = the model's
// default): temperature, top_p, top_k, min_p and the penalties in the base.
struct SamplingRequest : serving::SamplingOverrides {
  std::optional<int64_t> max_tokens;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  // flashdraft's "adaptive_speculation": choose the draft length per step
  // (true) or draft num_speculative_tokens every step (false); absent: the
  // server's --speculative-config setting.
  std::optional<bool> adaptive_speculation;
  int n = 1;
  bool stream = false, include_usage = false;
  std::vector<std::pair<int32_t, float>> logit_bias;  // clamped to [-100, 100], as vLLM does
  // Log-probabilities of each token and of this many alternatives
  // (completions: "logprobs": N; chat: "top_logprobs" with "logprobs": true).
  std::optional<int> logprobs;
};

// One prompt of /v1/completions: text, or token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int32_t> ids;
};

struct CompletionRequest {
  std::optional<std::string> model;
  std::vector<PromptInput> prompts;  // one choice per prompt and n
  SamplingRequest sampling;
};

// tool_choice: "none"; "auto" (the model may call a tool); "required" (it
// must call one or more); or {"type": "function", "function": {"name": N}}
// (it must call N), as OpenAI and vLLM read them.
enum class ToolChoice { None, Auto, Required, Function };

struct ChatRequest {
  std::optional<std::string> model;
  Json messages;  // as the chat template wants them (content parts joined, tool arguments as objects)
  Json tools;     // null when none
  ToolChoice tool_choice = ToolChoice::None;
  std::string tool_choice_function;  // ToolChoice::Function: the function's name (one of tools)
  bool parallel_tool_calls = true;   // false: the first call only (as vLLM filters them)
  Json template_kwargs = Json::object();  // chat_template_kwargs (enable_thinking, ...)
  bool add_generation_prompt = true;
  SamplingRequest sampling;
};

// Throw ApiError 400 on malformed JSON, a wrong type or value (naming the
// field), and on fields this server cannot honour (echo, prompt_logprobs,
// best_of, guided decoding, ...), saying so. logprobs / top_logprobs go up to
// engine::SamplingParams::kMaxLogprobs (20, vLLM's default max_logprobs). Token ids must lie in [0, vocab_size).
CompletionRequest parse_completion_request(const std::string& body, int64_t vocab_size);
ChatRequest parse_chat_request(const std::string& body, int64_t vocab_size);

// The request body as a JSON object (ApiError 400 when it is not one).
Json parse_body(const std::string& body);

// The engine's parameters for one choice: the model's defaults overridden by
// the request. max_tokens: the request's, else default_max_tokens, and never
// more than the context leaves; a prompt that leaves no room, or an explicit
// max_tokens past the context, is an ApiError 400 (as in vLLM).
engine::SamplingParams resolve_sampling(const SamplingRequest& request, const engine::SamplingParams& defaults,
                                        std::optional<int64_t> default_max_tokens, int64_t prompt_tokens,
                                        int64_t max_model_len);

}  // namespace flashdraft::server
