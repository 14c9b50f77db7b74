#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace flashdraft::tokenizer {

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string IncrementalDecoder::push(int32_t id) {
  const std::string& bytes = tokenizer_.token_bytes(id);
  if (skip_special_ && tokenizer_.is_special(id)) return {};
  pending_ += bytes;
  // Emitting only up to the unfinished character keeps every chunk whole and
  // the substitution of invalid bytes identical to decoding all ids at once.
  const size_t hold = utf8::incomplete_tail(pending_);
  std::string out;
  utf8::append_lossy(std::string_view(pending_).substr(0, pending_.size() - hold), out);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string IncrementalDecoder::flush() {
  std::string out;
  utf8::append_lossy(pending_, out);
  pending_.clear();
  return out;
}

}  // namespace flashdraft::tokenizer
