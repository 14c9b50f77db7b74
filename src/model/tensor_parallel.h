#pragma once
// Tensor parallelism in model/ (README "Tensor parallelism"): which part of
// each weight a rank holds, written once against the backend ops and the
// communicator (parallel/communicator.h), no device specifics.
//
// Over `size` ranks: q/k/v and gate/up are column-parallel (rank r holds its
// heads and its slice of the intermediate size), o_proj and down_proj
// row-parallel (the matching input columns) followed by a sum over ranks;
// KV heads are split too, or, with fewer KV heads than ranks, each rank
// holds the one KV head its query heads read. The embedding and lm_head are
// vocab-parallel: rank r holds rows [r V/size, (r+1) V/size); a lookup sums
// the ranks' rows (one non-zero per token), the logits stay sharded, and
// the greedy token comes from a min all-reduce of per-shard argmax keys
// (ops/argmax_key.h), the same token the whole row's argmax picks. The
// residual stream (and so the DFlash taps) is whole on every rank.
// The DFlash drafter is split the same way; its fc is row-parallel (each
// rank multiplies its slice of the taps' columns, then a sum) and its
// context K/V projection column-parallel (its KV heads).
//
// Every rank makes the same calls in the same order (SPMD); at size 1 none
// of this runs and the code path is the unsharded one.
#include <cstdint>
#include <string>

#include "io/model_config.h"
#include "parallel/communicator.h"

namespace flashdraft::model {

struct Shard {
  int rank = 0, size = 1;
  parallel::Communicator* comm = nullptr;  // null at size 1

  static Shard of(parallel::Communicator* comm) {
    return comm ? Shard{comm->rank(), comm->size(), comm} : Shard{};
  }
  bool active() const { return size > 1; }
  // This rank's share of n items split evenly (n divisible by size, checked
  // by check_shardable) and where it starts.
  int64_t count(int64_t n) const { return n / size; }
  int64_t begin(int64_t n) const { return rank * (n / size); }
  // KV heads: split when there are at least as many as ranks, else the one
  // that this rank's query heads read (rank * kv / size).
  int64_t kv_count(int64_t kv) const { return kv >= size ? kv / size : 1; }
  int64_t kv_begin(int64_t kv) const { return rank * kv / size; }
};

// Throws flashdraft::Error "<where><field> (<value>) is not divisible by
// --tensor-parallel-size <size>" for the first field that cannot be split:
// num_attention_heads, num_key_value_heads (or size by it, when smaller),
// intermediate_size, and vocab_size when `vocab` (the target's head).
void check_shardable(const io::ModelConfig& cfg, int size, const std::string& where, bool vocab);

}  // namespace flashdraft::model
