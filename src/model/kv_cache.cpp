#include "model/kv_cache.h"

#include <numeric>
#include <string>

#include "core/error.h"

namespace flashdraft::model {

KVCache::KVCache(ops::Backend& backend, std::vector<KVLayerShape> layers)
    : backend_(backend), layers_(std::move(layers)) {}

void KVCache::truncate(int64_t n) {
  if (n < 0 || n > length_)
    throw Error("KV cache: cannot truncate to " + std::to_string(n) + " tokens, it holds " + std::to_string(length_));
  length_ = n;
}

void KVCache::reserve_append(int64_t n) {
  reserved_ = length_ + n;
  const int64_t need = (length_ + n + kBlock - 1) / kBlock;
  const int64_t have = pool_ ? pool_->num_blocks() : 0;
  if (need <= have) return;
  // Geometric growth keeps token-by-token decoding amortised O(1); the
  // committed rows move to the new pool.
  auto grown = std::make_unique<KVPool>(backend_, std::max(need, 2 * have), kBlock, layers_);
  if (pool_ && length_ > 0)
    for (int64_t l = 0; l < num_layers(); ++l) {
      backend_.copy(pool_->k(l).row_slice(0, length_), grown->k(l).row_slice(0, length_));
      backend_.copy(pool_->v(l).row_slice(0, length_), grown->v(l).row_slice(0, length_));
    }
  pool_ = std::move(grown);
  table_.resize(static_cast<size_t>(pool_->num_blocks()));
  std::iota(table_.begin(), table_.end(), 0);
}

void KVCache::commit(int64_t n) {
  if (n < 0 || length_ + n > reserved_)
    throw Error("KV cache: commit of " + std::to_string(n) + " tokens without reserve_append");
  length_ += n;
}

}  // namespace flashdraft::model
