#pragma once
// The Split pre-tokenizer: a PCRE2 regex (from tokenizer.json) cuts
// normalised text into words; both matches and the gaps between them become
// words of their own (Hugging Face's "Isolated" behaviour).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::tokenizer {

class RegexSplitter {
 public:
  // `pattern` is compiled as given (UTF + Unicode properties, JIT); if
  // `literal`, it is matched as a plain string. Throws flashdraft::Error
  // naming `where` if it does not compile.
  RegexSplitter(const std::string& pattern, bool literal, const std::string& where);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Appends the words of valid UTF-8 `text` to `out` (views into `text`).
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashdraft::tokenizer
