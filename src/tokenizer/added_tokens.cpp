#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace flashdraft::tokenizer {

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(), [&](size_t a, size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

bool AddedTokenMatcher::match_at(std::string_view text, size_t pos, Match& m) const {
  const auto& bucket = by_first_byte_[static_cast<unsigned char>(text[pos])];
  for (size_t idx : bucket) {
    const std::string& c = tokens_[idx].content;
    if (text.compare(pos, c.size(), c) == 0) {
      m = {idx, pos + c.size()};
      return true;
    }
  }
  return false;
}

}  // namespace flashdraft::tokenizer
