#pragma once
// One choice's generated token ids -> the text a client may see, in deltas
// that are final the moment they are returned: never half a UTF-8 character
// (incremental detokenizer), never any part of a stop string (the longest
// tail that could still grow into one is held back until the next ids decide
// it). The CLI writes the deltas to stdout; the server sends them as SSE
// chunks, one TextOutput per choice.
//
// Stop strings end the text where they begin; the ids that follow add
// nothing. The engine's token sink can run one (returning !stopped) so that
// generation ends at the token that completes a stop string.
//
// The end-of-sequence or stop token that finishes a request carries no text
// in vLLM's output even with skip_special_tokens off: a caller that gets it
// (an engine StreamItem does) leaves it out.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "serving/stop_string_matcher.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::serving {

class TextOutput {
 public:
  // Throws flashdraft::Error on an empty stop string. skip_special_tokens:
  // special tokens (chat markers and the like) add no text, as in vLLM's
  // default; other added tokens (<think>) always do.
  TextOutput(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stop_strings,
             bool skip_special_tokens = true);

  struct Delta {
    std::string text;      // final text new since the last call (may be empty)
    bool stopped = false;  // a stop string completed: text ends right before it
  };

  // Ids past the tokenizer's vocabulary (models pad their embedding: Qwen3
  // has 151936 rows for 151669 tokens) add no text, as in transformers.
  Delta push(int32_t token);
  Delta push(std::span<const int32_t> tokens);
  // End of generation: the text held back (a possible stop string's start,
  // an unfinished character as U+FFFD). Nothing after a stop.
  Delta finish();

  bool stopped() const { return matcher_.stopped(); }
  const std::string& stop_string() const { return matcher_.matched(); }  // empty while not stopped
  const std::string& text() const { return text_; }  // every delta so far, joined

 private:
  Delta emit(StopStringMatcher::Step step);

  tokenizer::IncrementalDecoder decoder_;
  StopStringMatcher matcher_;
  int32_t vocab_size_;
  std::string text_;
  bool finished_ = false;
};

}  // namespace flashdraft::serving
