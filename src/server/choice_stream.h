#pragma once
// One choice of a response = one engine request, seen as text: detokenized
// on the engine thread as tokens are emitted (so a stop string stops the
// engine at the token that completes it), and handed to the HTTP thread as
// text deltas that never split a UTF-8 character or show any part of a stop
// string. Aborts its request when dropped unfinished (a client that went away).
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "server/generator.h"
#include "server/request_fields.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::server {

class Metrics;

struct ChoiceProgress {
  std::string text;       // new since the last call
  bool finished = false;  // the last progress of this choice
  // Of the tokens emitted since the last call, when the request asked
  // (their text may still be held back in `text`, or come after it).
  std::vector<engine::TokenLogprobs> logprobs = {};
};

class ChoiceStream {
 public:
  // Submits the request. Throws flashdraft::Error when the generator takes no more requests.
  ChoiceStream(Generator& generator, std::vector<int32_t> prompt, const engine::SamplingParams& params,
               const tokenizer::Tokenizer& tokenizer, bool skip_special_tokens, Metrics* metrics);
  ~ChoiceStream();
  ChoiceStream(const ChoiceStream&) = delete;
  ChoiceStream& operator=(const ChoiceStream&) = delete;

  // Waits up to `timeout` for the engine; nullopt when nothing happened.
  std::optional<ChoiceProgress> next(std::chrono::milliseconds timeout);
  bool finished() const { return finished_; }
  bool started() const { return first_token_.has_value(); }  // a token has come
  void abort();

  // Valid once finished():
  const std::string& finish_reason() const { return finish_reason_; }  // stop, length, abort, error
  const Json& stop_reason() const { return stop_reason_; }  // the stop string or stop token id, else null
  const std::string& error() const { return error_; }       // why, when finish_reason is "error"
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t completion_tokens() const { return completion_tokens_; }

 private:
  struct Text;  // shared with the engine thread's token sink
  void finish(const engine::StreamItem& last);

  Generator& generator_;
  Metrics* metrics_;
  std::shared_ptr<Text> text_;
  engine::RequestHandle handle_;
  std::vector<int32_t> stop_token_ids_;
  const std::chrono::steady_clock::time_point arrival_ = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> first_token_;
  bool finished_ = false;
  std::string finish_reason_, error_;
  Json stop_reason_ = nullptr;
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
};

}  // namespace flashdraft::server
