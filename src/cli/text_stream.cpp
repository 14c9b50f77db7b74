#include "cli/text_stream.h"

namespace flashdraft::cli {

TextStream::TextStream(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stops, Writer writer)
    : decoder_(tokenizer, /*skip_special=*/true),
      matcher_(std::move(stops)),
      writer_(std::move(writer)),
      vocab_size_(tokenizer.vocab_size()) {}

void TextStream::write(const std::string& piece) {
  if (piece.empty()) return;
  text_ += piece;
  writer_(piece);
}

bool TextStream::push(int32_t token) {
  if (matcher_.stopped()) return false;
  // Models pad their embedding past the tokenizer's last id (Qwen3: 151936
  // rows, 151669 tokens); such an id has no text, as in transformers' decode.
  if (token < 0 || token >= vocab_size_) return true;
  engine::StopStringMatcher::Step step = matcher_.push(decoder_.push(token));
  write(step.emit);
  return !step.stopped;
}

void TextStream::finish() {
  if (matcher_.stopped()) return;
  // The decoder's last bytes (an unfinished character) may still complete a stop string.
  engine::StopStringMatcher::Step step = matcher_.push(decoder_.flush());
  write(step.emit);
  if (!step.stopped) write(matcher_.flush());
}

}  // namespace flashdraft::cli
