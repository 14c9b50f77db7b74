#pragma once
// Owns the KV pool's blocks: which are free, and which belong to which
// request, in position order (the request's block table: position p lives in
// block table[p / block_size]). The target and the drafter share a request's
// table, so nothing here depends on a model.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/request.h"

namespace flashdraft::engine {

class BlockManager {
 public:
  // Throws flashdraft::Error unless num_blocks >= 1 (and fits an int32 block
  // id) and block_size >= 1.
  BlockManager(int64_t num_blocks, int64_t block_size);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  // Blocks that cover `tokens` positions.
  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  bool can_allocate(int64_t blocks) const { return blocks <= free_blocks(); }

  // Grows the request's table to cover positions [0, tokens). All or nothing:
  // returns false, changing nothing, when too few blocks are free. Never shrinks.
  bool ensure(RequestId id, int64_t tokens);
  // Returns all the request's blocks to the free list (no-op if it has none).
  void free(RequestId id);

  // The request's table (empty if it holds none). Valid until the next
  // ensure/free for that request.
  std::span<const int32_t> table(RequestId id) const;
  // Positions the request's table covers.
  int64_t capacity(RequestId id) const { return static_cast<int64_t>(table(id).size()) * block_size_; }

 private:
  int64_t num_blocks_, block_size_;
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
  std::unordered_map<RequestId, std::vector<int32_t>> tables_;
};

}  // namespace flashdraft::engine
