#pragma once
// Attention metadata for one batched forward (the engine builds it, models
// read it; model code stays free of scheduling). The batch's token rows are
// grouped by request: each SeqSlice says which rows are whose, at which
// positions, and where that request's KV lives in the pool.
#include <cstdint>
#include <span>
#include <vector>

namespace flashdraft::model {

struct SeqSlice {
  int64_t row_begin = 0;  // first row of this request in the batch
  int64_t n_rows = 0;     // its rows are positions pos0 .. pos0 + n_rows - 1
  int64_t pos0 = 0;       // positions < pos0 are already in the KV pool
  std::span<const int32_t> block_table;  // covers positions up to pos0 + n_rows - 1
  bool all_logits = false;  // logits for every row (verify), or only the last (prefill)
  // LogitRows::BlockTail (the drafter): logits for rows 1 .. tail_logits
  // only, the drafts that will be verified (-1: every row after row 0).
  int64_t tail_logits = -1;
};

// The largest batches a caller will run (rows, requests, positions a request
// reaches), for sizing buffers up front so that they never move.
struct BatchLimits {
  int64_t rows = 0, seqs = 0, keys = 0, block_size = 16;
};

struct BatchContext {
  std::vector<SeqSlice> seqs;
  int64_t total_rows() const { return seqs.empty() ? 0 : seqs.back().row_begin + seqs.back().n_rows; }
  // Rows of the logits output: per request in order, n_rows if all_logits else 1.
  int64_t logit_rows() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.all_logits ? s.n_rows : 1;
    return n;
  }
};

}  // namespace flashdraft::model
