#include "tokenizer/bpe.h"

#include <limits>
#include <queue>

namespace flashdraft::tokenizer {
namespace {

constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kMaxCacheEntries = 1 << 16;
// Below this many symbols a quadratic rescan beats maintaining a heap.
constexpr size_t kSmallWord = 48;

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

Bpe::Bpe(std::array<int32_t, 256> byte_ids, const std::vector<std::array<int32_t, 3>>& merges,
         std::unordered_map<std::string, int32_t> whole_words, BpeOptions options)
    : byte_ids_(byte_ids), whole_words_(std::move(whole_words)), options_(options) {
  merges_.reserve(merges.size() * 2);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& m = merges[rank];
    // A repeated pair takes its last rank, as in Hugging Face's merge map.
    merges_.insert_or_assign(pair_key(m[0], m[1]), Merge{static_cast<uint32_t>(rank), m[2]});
  }
}

const Bpe::Merge* Bpe::find_merge(int32_t left, int32_t right) const {
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void Bpe::initial_symbols(std::string_view word, std::vector<int32_t>& symbols) const {
  bool previous_unk = false;
  for (unsigned char b : word) {
    const int32_t id = byte_ids_[b];
    if (id >= 0) {
      symbols.push_back(id);
      previous_unk = false;
    } else if (options_.unk_id) {
      if (!(options_.fuse_unk && previous_unk)) symbols.push_back(*options_.unk_id);
      previous_unk = true;
    }
    // Without an unk token an unknown byte is dropped, as Hugging Face does.
  }
}

void Bpe::merge_small(std::vector<int32_t>& symbols) const {
  while (symbols.size() > 1) {
    uint32_t best_rank = std::numeric_limits<uint32_t>::max();
    size_t best = 0;
    int32_t merged = -1;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const Merge* m = find_merge(symbols[i], symbols[i + 1]);
      if (m && m->rank < best_rank) {
        best_rank = m->rank;
        best = i;
        merged = m->merged;
      }
    }
    if (merged < 0) return;
    symbols[best] = merged;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

void Bpe::merge_large(std::vector<int32_t>& symbols) const {
  // Symbols form a linked list; the heap holds candidate merges ordered by
  // (rank, position), so ties go to the leftmost pair. Entries made stale by
  // an earlier merge are detected when popped and dropped.
  const int n = static_cast<int>(symbols.size());
  std::vector<int> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    uint32_t rank;
    int pos;
    int32_t merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    if (const Merge* m = find_merge(symbols[pos], symbols[next[pos]])) heap.push({m->rank, pos, m->merged});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.pos] || next[c.pos] < 0) continue;
    const int right = next[c.pos];
    const Merge* m = find_merge(symbols[c.pos], symbols[right]);
    if (!m || m->merged != c.merged) continue;
    symbols[c.pos] = c.merged;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  size_t w = 0;
  for (int i = 0; i >= 0; i = next[i]) symbols[w++] = symbols[i];
  symbols.resize(w);
}

void Bpe::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> symbols;
  if (options_.ignore_merges) {
    if (const auto it = whole_words_.find(std::string(word)); it != whole_words_.end()) symbols.push_back(it->second);
  }
  if (symbols.empty()) {
    symbols.reserve(word.size());
    initial_symbols(word, symbols);
    if (symbols.size() <= kSmallWord) merge_small(symbols);
    else merge_large(symbols);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(symbols));
  }
}

void Bpe::clear_cache() const {
  std::lock_guard lock(cache_mutex_);
  cache_.clear();
}

}  // namespace flashdraft::tokenizer
