#include "serving/kv_pool_size.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace flashdraft::serving {

KvPoolSize size_kv_pool(const KvPoolDemand& d) {
  const int64_t longest = d.positions_per_seq > 0 ? std::min(d.positions_per_seq, d.max_model_len) : d.max_model_len;
  const int64_t positions = longest + d.draft_block;
  KvPoolSize size;
  size.blocks_per_seq = (positions + d.kv_block_size - 1) / d.kv_block_size;
  size.wanted_blocks = d.max_num_seqs * size.blocks_per_seq;
  size.num_blocks = size.wanted_blocks;
  if (!d.budget_bytes || d.bytes_per_block <= 0) return size;
  const int64_t affordable = *d.budget_bytes / d.bytes_per_block;
  if (affordable < size.blocks_per_seq) {
    constexpr double kGiB = 1 << 30;
    throw UsageError(fmt::format(
        "the KV cache for one request of up to {} positions needs {:.2f} GiB, but --gpu-memory-utilization {} of "
        "the GPU's free memory is {:.2f} GiB: lower --max-model-len or --max-tokens, or raise "
        "--gpu-memory-utilization",
        positions, static_cast<double>(size.blocks_per_seq * d.bytes_per_block) / kGiB, d.gpu_memory_utilization,
        static_cast<double>(*d.budget_bytes) / kGiB));
  }
  size.num_blocks = std::min(size.wanted_blocks, affordable);
  return size;
}

}  // namespace flashdraft::serving
