#pragma once
// One request's KV cache for the simple contiguous API (Qwen3Model::forward:
// the CLI's plain path, tests): a KVPool whose block table is the identity,
// so position p is slot p. It grows as tokens are appended.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/kv_pool.h"

namespace flashdraft::model {

class KVCache {
 public:
  KVCache(ops::Backend& backend, std::vector<KVLayerShape> layers);

  int64_t length() const { return length_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  const std::vector<KVLayerShape>& layers() const { return layers_; }
  void clear() { truncate(0); }
  // Forgets tokens n..length-1 (rejected speculative tokens, say). Throws if n > length().
  void truncate(int64_t n);

  // Makes room for `n` tokens past length() in every layer (keeping what is
  // there). Rows written there become part of the cache only on commit(n).
  void reserve_append(int64_t n);
  void commit(int64_t n);

  KVPool& pool() { return *pool_; }
  // Covers every reserved position.
  std::span<const int32_t> block_table() const { return table_; }

 private:
  static constexpr int64_t kBlock = 16;
  ops::Backend& backend_;
  std::vector<KVLayerShape> layers_;
  std::unique_ptr<KVPool> pool_;
  std::vector<int32_t> table_;
  int64_t length_ = 0;
  int64_t reserved_ = 0;  // positions reserve_append made room for
};

}  // namespace flashdraft::model
