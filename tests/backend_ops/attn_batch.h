#pragma once
// One batched step's attention metadata for the op harness and its perf mode:
// AttnBatch's arrays built on the host, then uploaded as I32 tensors to a
// backend and pointed at from an AttnBatch. Block ids come from a shuffled
// free list, so no table is contiguous or sorted, and the pool keeps spare
// blocks that no sequence owns: tests fill those with NaN, and every unused
// block-table entry points at one, so reading past a sequence's blocks
// poisons the result instead of quietly reading another sequence's keys.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "core/error.h"
#include "ops/backend.h"

namespace flashdraft::ops::testing {

// A sequence of the step: `context` positions already in the pool, then its
// `rows` query rows at positions context .. context + rows - 1.
struct SeqRows {
  int32_t context = 0;
  int32_t rows = 0;
};

struct HostAttnBatch {
  std::vector<SeqRows> seqs;
  int32_t block_size = 0;
  int32_t num_blocks = 0;  // the pool's blocks: the owned ones plus spares
  int32_t max_blocks = 0;  // row stride of block_tables
  int32_t n_rows = 0, max_rows = 0, max_keys = 0;
  std::vector<int32_t> q_start, pos0, block_tables, positions, slots;

  int64_t num_slots() const { return int64_t{num_blocks} * block_size; }
  // The pool slot holding position p of sequence s.
  int64_t slot(size_t s, int64_t p) const {
    return int64_t{block_tables[s * max_blocks + p / block_size]} * block_size + p % block_size;
  }
};

inline HostAttnBatch make_attn_batch(const std::vector<SeqRows>& seqs, int32_t block_size, uint64_t seed,
                                     int32_t spare_blocks = 3) {
  if (seqs.empty() || block_size <= 0 || spare_blocks < 1)
    throw Error("make_attn_batch: needs sequences, a block size and at least one spare block");
  HostAttnBatch b;
  b.seqs = seqs;
  b.block_size = block_size;
  int32_t owned = 0;
  for (const SeqRows& s : seqs) {
    const int32_t keys = s.context + s.rows;
    const int32_t blocks = (keys + block_size - 1) / block_size;
    owned += blocks;
    // One column more than the longest table, so every row has a padding entry.
    b.max_blocks = std::max(b.max_blocks, blocks + 1);
    b.max_rows = std::max(b.max_rows, s.rows);
    b.max_keys = std::max(b.max_keys, keys);
  }
  b.num_blocks = owned + spare_blocks;
  std::vector<int32_t> free(static_cast<size_t>(b.num_blocks));
  std::iota(free.begin(), free.end(), 0);
  std::shuffle(free.begin(), free.end(), std::mt19937_64(seed));
  const int32_t spare = free.back();  // stays unowned: a NaN block in tests
  free.pop_back();

  b.block_tables.assign(seqs.size() * static_cast<size_t>(b.max_blocks), spare);
  b.q_start.push_back(0);
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int32_t keys = seqs[s].context + seqs[s].rows;
    for (int32_t i = 0; i * block_size < keys; ++i) {
      b.block_tables[s * b.max_blocks + i] = free.back();
      free.pop_back();
    }
    b.pos0.push_back(seqs[s].context);
    for (int32_t i = 0; i < seqs[s].rows; ++i) {
      const int32_t p = seqs[s].context + i;
      b.positions.push_back(p);
      b.slots.push_back(static_cast<int32_t>(b.slot(s, p)));
    }
    b.q_start.push_back(b.q_start.back() + seqs[s].rows);
  }
  b.n_rows = b.q_start.back();
  return b;
}

// The arrays in one backend's memory; `batch` points into them (keep this alive).
struct BackendAttnBatch {
  OwnedTensor q_start, pos0, block_tables, positions, slots;
  AttnBatch batch;
};

inline OwnedTensor upload_i32(Backend& be, const std::vector<int32_t>& v) {
  OwnedTensor t = be.alloc_tensor(DType::I32, static_cast<int64_t>(v.size()), 1);
  if (!v.empty()) be.upload(t.t, v.data(), DType::I32);
  return t;
}

inline BackendAttnBatch upload_attn_batch(Backend& be, const HostAttnBatch& h) {
  BackendAttnBatch d;
  d.q_start = upload_i32(be, h.q_start);
  d.pos0 = upload_i32(be, h.pos0);
  d.block_tables = upload_i32(be, h.block_tables);
  d.positions = upload_i32(be, h.positions);
  d.slots = upload_i32(be, h.slots);
  AttnBatch& a = d.batch;
  a.n_seqs = static_cast<int32_t>(h.seqs.size());
  a.n_rows = h.n_rows;
  a.max_rows = h.max_rows;
  a.max_keys = h.max_keys;
  a.max_blocks = h.max_blocks;
  a.block_size = h.block_size;
  a.q_start = d.q_start.t.as<const int32_t>();
  a.pos0 = d.pos0.t.as<const int32_t>();
  a.block_tables = d.block_tables.t.as<const int32_t>();
  a.positions = d.positions.t.as<const int32_t>();
  a.slots = d.slots.t.as<const int32_t>();
  return d;
}

}  // namespace flashdraft::ops::testing
