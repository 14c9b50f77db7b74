#pragma once
// The one place that decides how many KV blocks an engine gets: room for
// max_num_seqs sequences at their longest, capped on a GPU by the share of
// free memory the user allows (--gpu-memory-utilization), as vLLM does. A
// capped pool still runs every request (the scheduler queues or preempts
// when blocks run out); one too small for a single sequence is refused.
#include <cstdint>
#include <optional>

namespace flashdraft::serving {

struct KvPoolDemand {
  int64_t max_num_seqs = 1;
  // Prompt + output positions one sequence may reach, at most max_model_len
  // (0: max_model_len, for a server that cannot know its prompts).
  int64_t positions_per_seq = 0;
  int64_t max_model_len = 0;
  // Positions a verify step writes past the last token (the drafter's
  // block_size; 1 without a drafter).
  int64_t draft_block = 1;
  int64_t kv_block_size = 16;
  int64_t bytes_per_block = 0;          // every layer's K and V, target and drafter
  std::optional<int64_t> budget_bytes;  // none: no cap (the CPU)
  double gpu_memory_utilization = 0.9;  // for the error message: how the budget was made
};

struct KvPoolSize {
  int64_t num_blocks = 0;
  int64_t blocks_per_seq = 0;  // one sequence at its longest, draft block included
  int64_t wanted_blocks = 0;   // max_num_seqs x blocks_per_seq
  bool capped() const { return num_blocks < wanted_blocks; }
  int64_t bytes(int64_t bytes_per_block) const { return num_blocks * bytes_per_block; }
};

// Throws UsageError when the budget cannot hold one sequence at its longest,
// saying how much it needs and what to lower.
KvPoolSize size_kv_pool(const KvPoolDemand& demand);

}  // namespace flashdraft::serving
