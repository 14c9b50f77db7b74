#include "engine/block_manager.h"

#include <limits>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace flashdraft::engine {

BlockManager::BlockManager(int64_t num_blocks, int64_t block_size) : num_blocks_(num_blocks), block_size_(block_size) {
  if (num_blocks < 1 || num_blocks > std::numeric_limits<int32_t>::max()) {
    throw Error("KV cache: " + std::to_string(num_blocks) + " blocks requested (expected 1 to 2^31-1)");
  }
  if (block_size < 1) {
    throw Error("KV cache: block size " + std::to_string(block_size) + " (expected at least 1 token)");
  }
  free_.reserve(static_cast<size_t>(num_blocks));
  // Pushed in reverse so that a fresh pool hands out blocks 0, 1, 2, ...
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

bool BlockManager::ensure(RequestId id, int64_t tokens) {
  if (tokens < 0) {
    throw std::logic_error("BlockManager::ensure: " + std::to_string(tokens) + " tokens for request " +
                           std::to_string(id));
  }
  const int64_t have = static_cast<int64_t>(table(id).size());
  const int64_t need = blocks_for(tokens) - have;
  if (need <= 0) return true;
  if (!can_allocate(need)) return false;
  auto& t = tables_[id];
  for (int64_t i = 0; i < need; ++i) {
    t.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void BlockManager::free(RequestId id) {
  auto it = tables_.find(id);
  if (it == tables_.end()) return;
  // Reversed so the request's first block is the next one handed out.
  for (auto b = it->second.rbegin(); b != it->second.rend(); ++b) free_.push_back(*b);
  tables_.erase(it);
}

std::span<const int32_t> BlockManager::table(RequestId id) const {
  auto it = tables_.find(id);
  if (it == tables_.end()) return {};
  return it->second;
}

}  // namespace flashdraft::engine
