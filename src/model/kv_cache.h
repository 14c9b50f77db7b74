#pragma once
// A simple per-request KV cache: for every layer, K and V rows of all tokens
// so far, contiguous, [tokens, kv_heads, head_dim]. It grows as tokens are
// appended. (The paged cache of the serving engine replaces it later.)
#include <cstdint>
#include <vector>

namespace flashdraft::model {

class KVCache {
 public:
  KVCache() = default;
  KVCache(int64_t num_layers, int64_t kv_dim);  // kv_dim = kv_heads * head_dim

  int64_t length() const { return length_; }
  int64_t num_layers() const { return static_cast<int64_t>(k_.size()); }
  int64_t kv_dim() const { return kv_dim_; }
  void clear() { truncate(0); }
  // Forgets tokens n..length-1 (rejected speculative tokens, say). Throws if n > length().
  void truncate(int64_t n);

  // Makes room for `n` tokens past length() in every layer. Rows written
  // there become part of the cache only on commit(n).
  void reserve_append(int64_t n);
  void commit(int64_t n);

  float* k(int64_t layer) { return k_[layer].data(); }
  float* v(int64_t layer) { return v_[layer].data(); }
  const float* k(int64_t layer) const { return k_[layer].data(); }
  const float* v(int64_t layer) const { return v_[layer].data(); }

 private:
  int64_t kv_dim_ = 0;
  int64_t length_ = 0;
  std::vector<std::vector<float>> k_, v_;
};

}  // namespace flashdraft::model
