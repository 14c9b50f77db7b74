#pragma once
// The tables behind a Tokenizer, shared by its copies. Built once by
// tokenizer_files.cpp, then never modified (except the BPE word cache).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"

namespace flashdraft::tokenizer {

struct TokenizerImpl {
  Normalization normalization = Normalization::kNone;
  // Applied in order; each splits the words of the previous one.
  std::vector<std::unique_ptr<RegexSplitter>> splitters;
  std::unique_ptr<Bpe> bpe;
  AddedTokenMatcher raw_added;         // matched on the text as given
  AddedTokenMatcher normalized_added;  // matched after normalisation

  std::vector<std::string> id_to_token;  // "" where no token has that id
  std::vector<std::string> id_to_bytes;  // what each id decodes to
  std::vector<bool> has_id;
  std::vector<bool> special;
  std::unordered_map<std::string, int32_t> token_to_id;

  std::string chat_template;
  std::optional<std::string> eos_token, bos_token, pad_token;
  bool add_bos_token = false;
};

std::shared_ptr<const TokenizerImpl> load_tokenizer_impl(const std::filesystem::path& tokenizer_json,
                                                         const std::filesystem::path& config_json);

}  // namespace flashdraft::tokenizer
