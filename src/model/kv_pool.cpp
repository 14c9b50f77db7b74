#include "model/kv_pool.h"

#include <string>

#include "core/error.h"

namespace flashdraft::model {

KVPool::KVPool(ops::Backend& backend, int64_t num_blocks, int64_t block_size, std::vector<KVLayerShape> layers)
    : backend_(backend), num_blocks_(num_blocks), block_size_(block_size), layers_(std::move(layers)) {
  if (num_blocks <= 0 || block_size <= 0)
    throw Error("KV pool needs a positive number of blocks and block size, got " + std::to_string(num_blocks) +
                " x " + std::to_string(block_size));
  const ops::DType dtype = backend.activation_dtype();
  for (const auto& s : layers_) {
    k_.push_back(backend.alloc_tensor(dtype, num_slots(), s.row()));
    v_.push_back(backend.alloc_tensor(dtype, num_slots(), s.row()));
  }
}

int64_t KVPool::bytes_per_block(int64_t block_size, std::span<const KVLayerShape> layers, ops::DType dtype) {
  int64_t elements = 0;
  for (const auto& s : layers) elements += 2 * block_size * s.row();
  return elements * static_cast<int64_t>(ops::dtype_size(dtype));
}

}  // namespace flashdraft::model
