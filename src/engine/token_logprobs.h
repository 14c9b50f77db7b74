#pragma once
// Log-probabilities of emitted tokens, as OpenAI's logprobs / top_logprobs
// report them and vLLM computes them by default: the log-softmax of the raw
// logits (before penalties, temperature and filters) of the row that
// produced the token. Computed on the host from the rows the model runner
// downloads, only for requests that ask (a 152k-vocabulary row is 0.6 MB to
// download and ~0.3 ms of one core to scan).
#include <cstdint>
#include <vector>

namespace flashdraft::engine {

struct TopLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<TopLogprob> top;  // the `top_n` most likely tokens, most likely first (lower id first on ties)
};

// One logits row of `vocab` floats; `token` the emitted one. The sums run in
// double. -inf logits give -inf log-probabilities.
TokenLogprobs token_logprobs(const float* logits, int64_t vocab, int32_t token, int top_n);

}  // namespace flashdraft::engine
