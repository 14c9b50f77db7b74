#include "serving/text_output.h"

namespace flashdraft::serving {

TextOutput::TextOutput(const tokenizer::Tokenizer& tokenizer, std::vector<std::string> stop_strings,
                       bool skip_special_tokens)
    : decoder_(tokenizer, skip_special_tokens),
      matcher_(std::move(stop_strings)),
      vocab_size_(tokenizer.vocab_size()) {}

TextOutput::Delta TextOutput::emit(StopStringMatcher::Step step) {
  text_ += step.emit;
  return {std::move(step.emit), step.stopped};
}

TextOutput::Delta TextOutput::push(int32_t token) {
  if (matcher_.stopped() || finished_ || token < 0 || token >= vocab_size_) return {};
  return emit(matcher_.push(decoder_.push(token)));
}

TextOutput::Delta TextOutput::push(std::span<const int32_t> tokens) {
  Delta all;
  for (int32_t token : tokens) {
    Delta d = push(token);
    all.text += d.text;
    if (d.stopped) {
      all.stopped = true;
      break;
    }
  }
  return all;
}

TextOutput::Delta TextOutput::finish() {
  if (matcher_.stopped() || finished_) return {};
  finished_ = true;
  // The decoder's last bytes (an unfinished character) may still complete a stop string.
  Delta d = emit(matcher_.push(decoder_.flush()));
  if (!d.stopped) {
    std::string rest = matcher_.flush();
    text_ += rest;
    d.text += rest;
  }
  return d;
}

}  // namespace flashdraft::serving
