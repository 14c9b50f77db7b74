// Reads tokenizer.json / tokenizer_config.json. Everything the encoder does
// comes from these files; what it cannot do faithfully is rejected here with
// the file and field named, rather than silently tokenizing differently.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_impl.h"

namespace flashdraft::tokenizer {
namespace {

using nlohmann::json;

// The split regex Hugging Face's ByteLevel pre-tokenizer uses when use_regex is true.
constexpr const char* kByteLevelRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class FileReader {
 public:
  explicit FileReader(std::filesystem::path path) : path_(std::move(path)) {}

  json parse() const {
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw Error(path_.string() + ": cannot open file");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      return json::parse(ss.str());
    } catch (const json::exception& e) {
      throw Error(path_.string() + ": not valid JSON: " + e.what());
    }
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(path_.string() + ": field \"" + field + "\": " + what);
  }

  const json& member(const json& obj, const std::string& key, const std::string& field) const {
    if (!obj.is_object() || !obj.contains(key)) fail(field, "missing");
    return obj.at(key);
  }

  std::string string_member(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = member(obj, key, field);
    if (!v.is_string()) fail(field, "expected a string, got " + std::string(v.type_name()));
    return v.get<std::string>();
  }

  // A missing or null flag counts as false/default.
  bool bool_member(const json& obj, const std::string& key, const std::string& field, bool fallback) const {
    if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return fallback;
    if (!obj.at(key).is_boolean()) fail(field, "expected true or false");
    return obj.at(key).get<bool>();
  }

  void require_false(const json& obj, const std::string& key, const std::string& field) const {
    if (bool_member(obj, key, field, false)) fail(field, "true is not supported (expected false)");
  }

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string type_of(const FileReader& f, const json& obj, const std::string& field) {
  if (!obj.is_object()) f.fail(field, "expected an object");
  return f.string_member(obj, "type", field + ".type");
}

Normalization read_normalizer(const FileReader& f, const json& root) {
  if (!root.contains("normalizer") || root["normalizer"].is_null()) return Normalization::kNone;
  const json& n = root["normalizer"];
  const std::string type = type_of(f, n, "normalizer");
  if (type == "NFC") return Normalization::kNfc;
  if (type == "Sequence") {
    const json& list = f.member(n, "normalizers", "normalizer.normalizers");
    if (!list.is_array()) f.fail("normalizer.normalizers", "expected an array");
    Normalization result = Normalization::kNone;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string field = "normalizer.normalizers[" + std::to_string(i) + "]";
      const std::string t = type_of(f, list[i], field);
      if (t != "NFC") f.fail(field + ".type", "unsupported normalizer \"" + t + "\" (supported: NFC)");
      result = Normalization::kNfc;
    }
    return result;
  }
  f.fail("normalizer.type", "unsupported normalizer \"" + type + "\" (supported: NFC, Sequence of NFC, null)");
}

void read_split(const FileReader& f, const json& s, const std::string& field, TokenizerImpl& impl) {
  const std::string behavior = f.string_member(s, "behavior", field + ".behavior");
  if (behavior != "Isolated") f.fail(field + ".behavior", "unsupported \"" + behavior + "\" (expected \"Isolated\")");
  f.require_false(s, "invert", field + ".invert");
  const json& pattern = f.member(s, "pattern", field + ".pattern");
  if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
    impl.splitters.push_back(
        std::make_unique<RegexSplitter>(pattern["Regex"].get<std::string>(), false, f.path().string() + ": " + field + ".pattern.Regex"));
  } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
    impl.splitters.push_back(
        std::make_unique<RegexSplitter>(pattern["String"].get<std::string>(), true, f.path().string() + ": " + field + ".pattern.String"));
  } else {
    f.fail(field + ".pattern", "expected {\"Regex\": \"...\"} or {\"String\": \"...\"}");
  }
}

void read_byte_level_pretokenizer(const FileReader& f, const json& b, const std::string& field, TokenizerImpl& impl) {
  f.require_false(b, "add_prefix_space", field + ".add_prefix_space");
  if (f.bool_member(b, "use_regex", field + ".use_regex", true))
    impl.splitters.push_back(std::make_unique<RegexSplitter>(kByteLevelRegex, false, "ByteLevel built-in regex"));
}

// Byte-level BPE needs ByteLevel as the last step: it turns words into the
// byte alphabet the vocabulary is written in.
void read_pre_tokenizer(const FileReader& f, const json& root, TokenizerImpl& impl) {
  const json& p = f.member(root, "pre_tokenizer", "pre_tokenizer");
  const std::string type = type_of(f, p, "pre_tokenizer");
  if (type == "ByteLevel") return read_byte_level_pretokenizer(f, p, "pre_tokenizer", impl);
  if (type != "Sequence")
    f.fail("pre_tokenizer.type", "unsupported pre-tokenizer \"" + type + "\" (supported: Sequence of Split + ByteLevel, ByteLevel)");
  const json& list = f.member(p, "pretokenizers", "pre_tokenizer.pretokenizers");
  if (!list.is_array() || list.empty()) f.fail("pre_tokenizer.pretokenizers", "expected a non-empty array");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]";
    const std::string t = type_of(f, list[i], field);
    const bool last = i + 1 == list.size();
    if (t == "Split" && !last) {
      read_split(f, list[i], field, impl);
    } else if (t == "ByteLevel" && last) {
      read_byte_level_pretokenizer(f, list[i], field, impl);
    } else {
      f.fail(field + ".type", "unsupported \"" + t + "\" here (expected Split steps followed by one ByteLevel)");
    }
  }
}

void read_decoder(const FileReader& f, const json& root) {
  const json& d = f.member(root, "decoder", "decoder");
  const std::string type = type_of(f, d, "decoder");
  if (type != "ByteLevel") f.fail("decoder.type", "unsupported decoder \"" + type + "\" (expected \"ByteLevel\")");
}

// Post-processors only add BOS/EOS-style tokens, which encode() never does
// (Hugging Face add_special_tokens=False), so the known kinds are accepted.
void read_post_processor(const FileReader& f, const json& root) {
  if (!root.contains("post_processor") || root["post_processor"].is_null()) return;
  const std::string type = type_of(f, root["post_processor"], "post_processor");
  if (type != "ByteLevel" && type != "TemplateProcessing")
    f.fail("post_processor.type", "unsupported \"" + type + "\" (expected ByteLevel, TemplateProcessing or null)");
}

int32_t vocab_id(const FileReader& f, const std::unordered_map<std::string, int32_t>& vocab, const std::string& token,
                 const std::string& field) {
  const auto it = vocab.find(token);
  if (it == vocab.end()) f.fail(field, "token \"" + token + "\" is not in model.vocab");
  return it->second;
}

void read_model(const FileReader& f, const json& root, TokenizerImpl& impl) {
  const json& m = f.member(root, "model", "model");
  const std::string type = type_of(f, m, "model");
  if (type != "BPE") f.fail("model.type", "unsupported model \"" + type + "\" (expected \"BPE\")");
  f.require_false(m, "byte_fallback", "model.byte_fallback");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (m.contains(key) && !m[key].is_null() && !(m[key].is_string() && m[key].get<std::string>().empty()))
      f.fail(std::string("model.") + key, "only null or \"\" is supported");
  }
  if (m.contains("dropout") && !m["dropout"].is_null() && !(m["dropout"].is_number() && m["dropout"].get<double>() == 0.0))
    f.fail("model.dropout", "BPE dropout is not supported (expected null)");

  const json& vocab_json = f.member(m, "vocab", "model.vocab");
  if (!vocab_json.is_object()) f.fail("model.vocab", "expected an object of token -> id");
  std::unordered_map<std::string, int32_t> vocab;
  vocab.reserve(vocab_json.size());
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab_json.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      f.fail("model.vocab[\"" + token + "\"]", "expected a non-negative integer id");
    vocab.emplace(token, id.get<int32_t>());
    max_id = std::max(max_id, id.get<int32_t>());
  }

  const json& merges_json = f.member(m, "merges", "model.merges");
  if (!merges_json.is_array()) f.fail("model.merges", "expected an array");
  std::vector<std::array<int32_t, 3>> merges;
  merges.reserve(merges_json.size());
  for (size_t i = 0; i < merges_json.size(); ++i) {
    const std::string field = "model.merges[" + std::to_string(i) + "]";
    const json& e = merges_json[i];
    std::string left, right;
    // Older files write "a b", newer ones ["a", "b"].
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        f.fail(field, "expected two tokens separated by one space");
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      left = e[0].get<std::string>();
      right = e[1].get<std::string>();
    } else {
      f.fail(field, "expected \"a b\" or [\"a\", \"b\"]");
    }
    merges.push_back({vocab_id(f, vocab, left, field), vocab_id(f, vocab, right, field), vocab_id(f, vocab, left + right, field)});
  }

  BpeOptions options;
  if (m.contains("unk_token") && !m["unk_token"].is_null()) {
    if (!m["unk_token"].is_string()) f.fail("model.unk_token", "expected a string or null");
    options.unk_id = vocab_id(f, vocab, m["unk_token"].get<std::string>(), "model.unk_token");
  }
  options.fuse_unk = f.bool_member(m, "fuse_unk", "model.fuse_unk", false);
  options.ignore_merges = f.bool_member(m, "ignore_merges", "model.ignore_merges", false);

  std::array<int32_t, 256> byte_ids;
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab.find(byte_level::byte_to_text(static_cast<uint8_t>(b)));
    byte_ids[b] = it == vocab.end() ? -1 : it->second;
  }
  std::unordered_map<std::string, int32_t> whole_words;
  if (options.ignore_merges) {
    for (const auto& [token, id] : vocab)
      if (auto bytes = byte_level::text_to_bytes(token)) whole_words.emplace(std::move(*bytes), id);
  }
  impl.bpe = std::make_unique<Bpe>(byte_ids, merges, std::move(whole_words), options);

  impl.id_to_token.assign(static_cast<size_t>(max_id + 1), std::string());
  impl.has_id.assign(static_cast<size_t>(max_id + 1), false);
  for (auto& [token, id] : vocab) {
    impl.id_to_token[id] = token;
    impl.has_id[id] = true;
  }
  impl.token_to_id = std::move(vocab);
}

void read_added_tokens(const FileReader& f, const json& root, TokenizerImpl& impl) {
  impl.special.assign(impl.id_to_token.size(), false);
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return;
  const json& list = root["added_tokens"];
  if (!list.is_array()) f.fail("added_tokens", "expected an array");
  std::vector<AddedToken> raw, normalized;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    const json& t = list[i];
    const json& id_json = f.member(t, "id", field + ".id");
    if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 || id_json.get<int64_t>() > INT32_MAX)
      f.fail(field + ".id", "expected a non-negative integer");
    const auto id = id_json.get<int32_t>();
    std::string content = f.string_member(t, "content", field + ".content");
    if (content.empty()) f.fail(field + ".content", "must not be empty");
    for (const char* flag : {"lstrip", "rstrip", "single_word"}) f.require_false(t, flag, field + "." + flag);
    const bool special = f.bool_member(t, "special", field + ".special", false);
    // Hugging Face's default: special tokens match the raw text, others the normalised text.
    const bool is_normalized = f.bool_member(t, "normalized", field + ".normalized", !special);

    if (static_cast<size_t>(id) >= impl.id_to_token.size()) {
      impl.id_to_token.resize(static_cast<size_t>(id) + 1);
      impl.has_id.resize(static_cast<size_t>(id) + 1, false);
      impl.special.resize(static_cast<size_t>(id) + 1, false);
    }
    impl.id_to_token[id] = content;
    impl.has_id[id] = true;
    impl.special[id] = special;
    impl.token_to_id.insert_or_assign(content, id);
    std::string match = is_normalized ? normalize(impl.normalization, content) : content;
    (is_normalized ? normalized : raw).push_back({id, std::move(match), special});
  }
  impl.raw_added = AddedTokenMatcher(std::move(raw));
  impl.normalized_added = AddedTokenMatcher(std::move(normalized));
}

// Decoding is a table lookup: each id's bytes are computed once here.
void build_decode_table(TokenizerImpl& impl) {
  impl.id_to_bytes.resize(impl.id_to_token.size());
  for (size_t id = 0; id < impl.id_to_token.size(); ++id) {
    const std::string& text = impl.id_to_token[id];
    // Like Hugging Face's ByteLevel decoder: text outside the byte alphabet
    // (added tokens such as "<think>" mostly are inside it) passes through.
    auto bytes = byte_level::text_to_bytes(text);
    impl.id_to_bytes[id] = bytes ? std::move(*bytes) : text;
  }
}

std::optional<std::string> read_token_field(const FileReader& f, const json& cfg, const std::string& key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::nullopt;
  const json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  f.fail(key, "expected a string, {\"content\": ...} or null");
}

void read_config(const std::filesystem::path& path, TokenizerImpl& impl) {
  const FileReader f(path);
  const json cfg = f.parse();
  if (!cfg.is_object()) f.fail("(root)", "expected a JSON object");
  if (cfg.contains("chat_template") && !cfg["chat_template"].is_null()) {
    const json& ct = cfg["chat_template"];
    if (ct.is_string()) {
      impl.chat_template = ct.get<std::string>();
    } else if (ct.is_array()) {  // older multi-template form: [{"name": ..., "template": ...}]
      for (const json& e : ct)
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
          impl.chat_template = e["template"].get<std::string>();
      if (impl.chat_template.empty()) f.fail("chat_template", "list has no entry named \"default\"");
    } else {
      f.fail("chat_template", "expected a string or a list of {name, template}");
    }
  }
  impl.eos_token = read_token_field(f, cfg, "eos_token");
  impl.bos_token = read_token_field(f, cfg, "bos_token");
  impl.pad_token = read_token_field(f, cfg, "pad_token");
  impl.add_bos_token = f.bool_member(cfg, "add_bos_token", "add_bos_token", false);
}

// Newer transformers versions store the template beside the config.
void read_chat_template_file(const std::filesystem::path& path, TokenizerImpl& impl) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  impl.chat_template = ss.str();
}

}  // namespace

std::shared_ptr<const TokenizerImpl> load_tokenizer_impl(const std::filesystem::path& tokenizer_json,
                                                         const std::filesystem::path& config_json) {
  auto impl = std::make_shared<TokenizerImpl>();
  const FileReader f(tokenizer_json);
  const json root = f.parse();
  if (!root.is_object()) f.fail("(root)", "expected a JSON object");
  impl->normalization = read_normalizer(f, root);
  read_pre_tokenizer(f, root, *impl);
  read_decoder(f, root);
  read_post_processor(f, root);
  read_model(f, root, *impl);
  read_added_tokens(f, root, *impl);
  build_decode_table(*impl);
  if (!config_json.empty()) {
    read_config(config_json, *impl);
    const auto jinja = config_json.parent_path() / "chat_template.jinja";
    if (impl->chat_template.empty() && std::filesystem::exists(jinja)) read_chat_template_file(jinja, *impl);
  }
  return impl;
}

}  // namespace flashdraft::tokenizer
