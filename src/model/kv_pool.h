#pragma once
// Paged KV storage shared by every attention layer of a request's models: the
// target's layers and the DFlash drafter's layers live in one pool and use the
// same block table, so token position p of a request sits in the same slot in
// every layer. The engine's block manager decides which blocks a request owns;
// this class only holds the numbers, in the backend's memory and activation
// dtype.
//
// Layer l stores K and V as [num_blocks * block_size, kv_heads_l * head_dim_l].
#include <cstdint>
#include <span>
#include <vector>

#include "ops/backend.h"

namespace flashdraft::model {

struct KVLayerShape {
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t row() const { return kv_heads * head_dim; }
};

class KVPool {
 public:
  KVPool(ops::Backend& backend, int64_t num_blocks, int64_t block_size, std::vector<KVLayerShape> layers);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t num_slots() const { return num_blocks_ * block_size_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  const KVLayerShape& shape(int64_t layer) const { return layers_[static_cast<size_t>(layer)]; }
  ops::Backend& backend() const { return backend_; }

  // Layer l's K (V): [num_slots(), shape(l).row()].
  const ops::Tensor& k(int64_t layer) const { return k_[static_cast<size_t>(layer)].t; }
  const ops::Tensor& v(int64_t layer) const { return v_[static_cast<size_t>(layer)].t; }

  // Bytes one block costs across all layers (K and V) in `dtype`: for sizing the pool.
  static int64_t bytes_per_block(int64_t block_size, std::span<const KVLayerShape> layers, ops::DType dtype);

 private:
  ops::Backend& backend_;
  int64_t num_blocks_, block_size_;
  std::vector<KVLayerShape> layers_;
  std::vector<ops::OwnedTensor> k_, v_;
};

// The pool slot holding token position `pos` of a request with this block table.
inline int64_t slot_of(std::span<const int32_t> block_table, int64_t block_size, int64_t pos) {
  return static_cast<int64_t>(block_table[static_cast<size_t>(pos / block_size)]) * block_size +
         pos % block_size;
}

}  // namespace flashdraft::model
