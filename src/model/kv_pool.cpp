#include "model/kv_pool.h"

#include <string>

#include "core/error.h"

namespace flashdraft::model {

KVPool::KVPool(int64_t num_blocks, int64_t block_size, std::vector<KVLayerShape> layers)
    : num_blocks_(num_blocks), block_size_(block_size), layers_(std::move(layers)) {
  if (num_blocks <= 0 || block_size <= 0)
    throw Error("KV pool needs a positive number of blocks and block size, got " +
                std::to_string(num_blocks) + " x " + std::to_string(block_size));
  k_.resize(layers_.size());
  v_.resize(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto n = static_cast<size_t>(num_blocks * block_size * layers_[l].row());
    k_[l].assign(n, 0.0f);
    v_[l].assign(n, 0.0f);
  }
}

int64_t KVPool::bytes_per_block(int64_t block_size, std::span<const KVLayerShape> layers) {
  int64_t floats = 0;
  for (const auto& s : layers) floats += 2 * block_size * s.row();
  return floats * static_cast<int64_t>(sizeof(float));
}

}  // namespace flashdraft::model
