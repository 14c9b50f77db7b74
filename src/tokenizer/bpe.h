#pragma once
// Byte-level BPE: a word's bytes start as one symbol each and the adjacent
// pair with the lowest merge rank is merged until no listed pair remains.
#include <array>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace flashdraft::tokenizer {

struct BpeOptions {
  std::optional<int32_t> unk_id;  // symbol for bytes missing from the vocabulary
  bool fuse_unk = false;          // consecutive unknown bytes become one unk
  bool ignore_merges = false;     // a word that is itself in the vocabulary skips merging
};

// Lets string-keyed maps be searched with a string_view, without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class Bpe {
 public:
  // `byte_ids[b]` is the vocabulary id of the single byte b (-1 if absent).
  // `merges` lists (left id, right id, merged id) in rank order.
  // `whole_words` maps a word's raw bytes to its id; used only with ignore_merges.
  Bpe(std::array<int32_t, 256> byte_ids, const std::vector<std::array<int32_t, 3>>& merges,
      std::unordered_map<std::string, int32_t> whole_words, BpeOptions options);

  // Appends the ids of one pre-tokenized word (raw bytes) to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  void clear_cache() const;

 private:
  struct Merge {
    uint32_t rank;
    int32_t merged;
  };
  const Merge* find_merge(int32_t left, int32_t right) const;
  void initial_symbols(std::string_view word, std::vector<int32_t>& symbols) const;
  void merge_small(std::vector<int32_t>& symbols) const;
  void merge_large(std::vector<int32_t>& symbols) const;

  std::array<int32_t, 256> byte_ids_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::unordered_map<std::string, int32_t> whole_words_;
  BpeOptions options_;

  // Words repeat a lot in real text; the cache makes them one hash lookup.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace flashdraft::tokenizer
