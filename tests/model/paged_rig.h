#pragma once
// Test scaffolding for the paged forward: a KV pool poisoned with NaN (any
// read of a slot that no forward wrote turns logits into NaN), block tables
// grown from a shuffled free list (so no table is contiguous or sorted), and
// a builder for one batched step.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "model/batch.h"
#include "model/kv_pool.h"

namespace flashdraft::model::testing {

class PagedRig {
 public:
  PagedRig(ops::Backend& backend, int64_t num_blocks, int64_t block_size, std::vector<KVLayerShape> layers,
           uint32_t seed = 1)
      : pool(backend, num_blocks, block_size, std::move(layers)), free_(static_cast<size_t>(num_blocks)) {
    std::iota(free_.begin(), free_.end(), 0);
    std::shuffle(free_.begin(), free_.end(), std::mt19937(seed));
    for (int64_t l = 0; l < pool.num_layers(); ++l) {
      backend.fill_nan(pool.k(l));
      backend.fill_nan(pool.v(l));
    }
  }

  // Request r's table, grown to cover positions [0, len).
  const std::vector<int32_t>& cover(size_t r, int64_t len) {
    if (tables_.size() <= r) tables_.resize(r + 1);
    auto& t = tables_[r];
    while (static_cast<int64_t>(t.size()) * pool.block_size() < len) {
      t.push_back(free_.back());
      free_.pop_back();
    }
    return t;
  }

  KVPool pool;

 private:
  std::vector<int32_t> free_;
  std::vector<std::vector<int32_t>> tables_;
};

// One request's part of a step: its rows are tokens[pos0, pos0 + n_rows).
struct Part {
  size_t req;
  int64_t pos0, n_rows;
  bool all_logits;
};

struct Step {
  BatchContext batch;
  std::vector<int32_t> tokens;
};

// seqs[r] is request r's full token sequence.
inline Step make_step(PagedRig& rig, const std::vector<std::vector<int32_t>>& seqs, const std::vector<Part>& parts) {
  Step s;
  for (const Part& p : parts) {
    const auto& table = rig.cover(p.req, p.pos0 + p.n_rows);
    s.batch.seqs.push_back(SeqSlice{static_cast<int64_t>(s.tokens.size()), p.n_rows, p.pos0, table, p.all_logits});
    s.tokens.insert(s.tokens.end(), seqs[p.req].begin() + p.pos0, seqs[p.req].begin() + p.pos0 + p.n_rows);
  }
  return s;
}

}  // namespace flashdraft::model::testing
