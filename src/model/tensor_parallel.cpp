#include "model/tensor_parallel.h"

#include "core/error.h"

namespace flashdraft::model {
namespace {

void require_divisible(int64_t value, int size, const std::string& where, const char* field) {
  if (value % size != 0)
    throw Error(where + field + " (" + std::to_string(value) + ") is not divisible by --tensor-parallel-size " +
                std::to_string(size));
}

}  // namespace

void check_shardable(const io::ModelConfig& cfg, int size, const std::string& where, bool vocab) {
  if (size <= 1) return;
  require_divisible(cfg.num_attention_heads, size, where, "num_attention_heads");
  const int64_t kv = cfg.num_key_value_heads;
  if (kv >= size) {
    require_divisible(kv, size, where, "num_key_value_heads");
  } else if (size % kv != 0) {
    throw Error(where + "num_key_value_heads (" + std::to_string(kv) + ") is fewer than --tensor-parallel-size " +
                std::to_string(size) + " and does not divide it (each rank holds whole KV heads)");
  }
  require_divisible(cfg.intermediate_size, size, where, "intermediate_size");
  if (vocab) require_divisible(cfg.vocab_size, size, where, "vocab_size");
}

}  // namespace flashdraft::model
