#include "model/kv_cache.h"

#include <string>

#include "core/error.h"

namespace flashdraft::model {

KVCache::KVCache(int64_t num_layers, int64_t kv_dim)
    : kv_dim_(kv_dim), k_(static_cast<size_t>(num_layers)), v_(static_cast<size_t>(num_layers)) {}

void KVCache::truncate(int64_t n) {
  if (n < 0 || n > length_)
    throw Error("KV cache: cannot truncate to " + std::to_string(n) + " tokens, it holds " +
                std::to_string(length_));
  length_ = n;
}

void KVCache::reserve_append(int64_t n) {
  const size_t need = static_cast<size_t>((length_ + n) * kv_dim_);
  // std::vector grows geometrically, so token-by-token decoding stays amortised O(1).
  for (auto& k : k_)
    if (k.size() < need) k.resize(need);
  for (auto& v : v_)
    if (v.size() < need) v.resize(need);
}

void KVCache::commit(int64_t n) {
  if (!k_.empty() && static_cast<size_t>((length_ + n) * kv_dim_) > k_[0].size())
    throw Error("KV cache: commit of " + std::to_string(n) + " tokens without reserve_append");
  length_ += n;
}

}  // namespace flashdraft::model
