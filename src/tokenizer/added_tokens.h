#pragma once
// Finds added tokens (<|im_start|>, <think>, ...) in text before any other
// processing, the way Hugging Face does: leftmost-longest, non-overlapping.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::tokenizer {

struct AddedToken {
  int32_t id;
  std::string content;
  bool special;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  bool empty() const { return tokens_.empty(); }

  // Calls on_text(piece) for text between matches and on_token(id) for each
  // match, in order. A special token met while !parse_special stays text;
  // like Hugging Face, its bytes are still consumed by the match so no other
  // added token is looked for inside it.
  template <class OnText, class OnToken>
  void split(std::string_view text, bool parse_special, OnText&& on_text, OnToken&& on_token) const;

 private:
  struct Match {
    size_t token;  // index into tokens_
    size_t end;
  };
  // Longest token starting exactly at `pos`, if any.
  bool match_at(std::string_view text, size_t pos, Match& m) const;

  std::vector<AddedToken> tokens_;
  // Token indices by first byte, longest first.
  std::array<std::vector<size_t>, 256> by_first_byte_;
};

template <class OnText, class OnToken>
void AddedTokenMatcher::split(std::string_view text, bool parse_special, OnText&& on_text,
                              OnToken&& on_token) const {
  size_t piece_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    Match m;
    if (!match_at(text, pos, m)) {
      ++pos;
      continue;
    }
    const AddedToken& tok = tokens_[m.token];
    if (tok.special && !parse_special) {
      pos = m.end;
      continue;
    }
    if (pos > piece_start) on_text(text.substr(piece_start, pos - piece_start));
    on_token(tok.id);
    pos = piece_start = m.end;
  }
  if (piece_start < text.size()) on_text(text.substr(piece_start));
}

}  // namespace flashdraft::tokenizer
