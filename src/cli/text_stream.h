#pragma once
// Turns sampled token ids into the text the user sees: complete UTF-8
// characters only (incremental detokenizer), stop strings never shown
// (StopStringMatcher), each piece written out as soon as it is final.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/stop_string_matcher.h"
#include "tokenizer/tokenizer.h"

namespace flashdraft::cli {

class TextStream {
 public:
  using Writer = std::function<void(std::string_view)>;
  // Special tokens (chat markers and the like) are left out of the text.
  TextStream(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stops, Writer writer);

  // Returns false once a stop string has been seen (generation should end).
  // Ids past the tokenizer's vocabulary add no text.
  bool push(int32_t token);
  // End of generation: writes whatever was held back.
  void finish();

  const std::string& text() const { return text_; }  // everything written
  const engine::StopStringMatcher& matcher() const { return matcher_; }

 private:
  void write(const std::string& piece);

  tokenizer::IncrementalDecoder decoder_;
  engine::StopStringMatcher matcher_;
  Writer writer_;
  int32_t vocab_size_;
  std::string text_;
};

}  // namespace flashdraft::cli
