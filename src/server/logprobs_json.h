#pragma once
// Token log-probabilities (engine::TokenLogprobs) in the shapes OpenAI's API
// gives them, as vLLM fills them: token strings are each token decoded on
// its own (a piece of a UTF-8 character shows as U+FFFD), log-probabilities
// below -9999 (-inf) are -9999.
//   completions: {"text_offset", "token_logprobs", "tokens", "top_logprobs"};
//     top_logprobs[i] = {token string: logprob} of the emitted token, then the
//     `logprobs` most likely (so up to logprobs + 1 entries, as OpenAI says).
//   chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]};
//     top_logprobs = the `top_logprobs` most likely, most likely first; bytes
//     are the token's own bytes (OpenAI's), not its decoded string's.
#include <cstdint>
#include <vector>

#include "engine/token_logprobs.h"
#include "server/request_fields.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::server {

// `text_offset`: where the first token's text starts in the choice's text
// (characters, as OpenAI counts); advanced past these tokens.
Json completion_logprobs(const std::vector<engine::TokenLogprobs>& tokens, const tokenizer::Tokenizer& tokenizer,
                         int64_t& text_offset);
Json chat_logprobs(const std::vector<engine::TokenLogprobs>& tokens, const tokenizer::Tokenizer& tokenizer);

}  // namespace flashdraft::server
