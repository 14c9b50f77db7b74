#pragma once
// Hugging Face compatible byte-level BPE tokenizer (Qwen family), built from
// a model directory's tokenizer.json and tokenizer_config.json.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace flashdraft::tokenizer {

struct TokenizerImpl;

// Cheap to copy and move: copies share the same immutable tables. All const
// methods are safe to call from several threads.
class Tokenizer {
 public:
  // Reads model_dir/tokenizer.json and model_dir/tokenizer_config.json (and
  // model_dir/chat_template.jinja when the config has no chat_template).
  static Tokenizer load(const std::filesystem::path& model_dir);
  // Same from explicit paths; an empty config path means "no config".
  static Tokenizer load_files(const std::filesystem::path& tokenizer_json,
                              const std::filesystem::path& tokenizer_config_json);

  // Token ids of valid UTF-8 `text`, without BOS/EOS (Hugging Face's
  // add_special_tokens=False). With parse_special=false, special tokens
  // written in the text are encoded as plain text. Throws flashdraft::Error
  // on invalid UTF-8.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;
  // Text of `ids`; invalid UTF-8 from partial characters becomes U+FFFD.
  // skip_special drops special tokens. Throws on ids outside the vocabulary.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::string id_to_token(int32_t id) const;  // raw vocab string; throws if unknown
  int32_t vocab_size() const;                 // max id + 1, added tokens included
  bool is_special(int32_t id) const;

  const std::string& chat_template() const;  // "" if none
  std::optional<int32_t> eos_token_id() const;
  std::optional<int32_t> bos_token_id() const;
  std::optional<int32_t> pad_token_id() const;
  std::optional<std::string> eos_token() const;
  std::optional<std::string> bos_token() const;
  std::optional<std::string> pad_token() const;
  bool add_bos_token() const;

  // Raw bytes token `id` stands for (may be part of a UTF-8 character).
  const std::string& token_bytes(int32_t id) const;
  // Drops the per-word BPE cache (benchmarks measure cold encodes with it).
  void clear_cache() const;

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const TokenizerImpl> impl_;
};

// Streaming detokenizer: push() returns the text completed by each new token
// and never ends inside a UTF-8 character; flush() returns what was held
// back. The concatenated output equals Tokenizer::decode of all ids.
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special = true);
  std::string push(int32_t id);
  std::string flush();

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes of an unfinished character
};

}  // namespace flashdraft::tokenizer
