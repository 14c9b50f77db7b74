#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace flashdraft::tokenizer {
namespace {

// Pre-tokenizes one normalised piece and appends its BPE ids.
void encode_plain(const TokenizerImpl& impl, std::string_view piece, std::vector<std::string_view>& words,
                  std::vector<std::string_view>& scratch, std::vector<int32_t>& out) {
  words.clear();
  words.push_back(piece);
  for (const auto& splitter : impl.splitters) {
    scratch.clear();
    for (std::string_view w : words) splitter->split(w, scratch);
    words.swap(scratch);
  }
  for (std::string_view w : words) impl.bpe->encode_word(w, out);
}

}  // namespace

Tokenizer Tokenizer::load(const std::filesystem::path& model_dir) {
  return load_files(model_dir / "tokenizer.json", model_dir / "tokenizer_config.json");
}

Tokenizer Tokenizer::load_files(const std::filesystem::path& tokenizer_json,
                                const std::filesystem::path& tokenizer_config_json) {
  return Tokenizer(load_tokenizer_impl(tokenizer_json, tokenizer_config_json));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  if (const size_t bad = utf8::find_invalid(text); bad != std::string_view::npos)
    throw Error("tokenizer encode: input is not valid UTF-8 (first bad byte at offset " + std::to_string(bad) + ")");
  const TokenizerImpl& impl = *impl_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  std::vector<std::string_view> words, scratch;
  auto on_token = [&](int32_t id) { out.push_back(id); };
  // Hugging Face order: raw added tokens are cut out first, each remaining
  // piece is normalised on its own, then normalised added tokens are cut out.
  impl.raw_added.split(text, parse_special, [&](std::string_view piece) {
    const std::string normalized = normalize(impl.normalization, piece);
    if (impl.normalized_added.empty()) {
      encode_plain(impl, normalized, words, scratch, out);
      return;
    }
    impl.normalized_added.split(normalized, parse_special, [&](std::string_view sub) {
      encode_plain(impl, sub, words, scratch, out);
    }, on_token);
  }, on_token);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  bytes.reserve(ids.size() * 4);
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    bytes += token_bytes(id);
  }
  std::string out;
  out.reserve(bytes.size());
  utf8::append_lossy(bytes, out);
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  const auto it = impl_->token_to_id.find(std::string(token));
  if (it == impl_->token_to_id.end()) return std::nullopt;
  return it->second;
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !impl_->has_id[id])
    throw Error("tokenizer: token id " + std::to_string(id) + " is not in the vocabulary (vocab size " +
                std::to_string(vocab_size()) + ")");
  return impl_->id_to_bytes[id];
}

std::string Tokenizer::id_to_token(int32_t id) const {
  token_bytes(id);  // validates the id
  return impl_->id_to_token[id];
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_to_token.size()); }

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && impl_->special[id];
}

const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }

namespace {
std::optional<int32_t> id_of(const Tokenizer& t, const std::optional<std::string>& token) {
  return token ? t.token_to_id(*token) : std::nullopt;
}
}  // namespace

std::optional<int32_t> Tokenizer::eos_token_id() const { return id_of(*this, impl_->eos_token); }
std::optional<int32_t> Tokenizer::bos_token_id() const { return id_of(*this, impl_->bos_token); }
std::optional<int32_t> Tokenizer::pad_token_id() const { return id_of(*this, impl_->pad_token); }
std::optional<std::string> Tokenizer::eos_token() const { return impl_->eos_token; }
std::optional<std::string> Tokenizer::bos_token() const { return impl_->bos_token; }
std::optional<std::string> Tokenizer::pad_token() const { return impl_->pad_token; }
bool Tokenizer::add_bos_token() const { return impl_->add_bos_token; }

void Tokenizer::clear_cache() const { impl_->bpe->clear_cache(); }

}  // namespace flashdraft::tokenizer
