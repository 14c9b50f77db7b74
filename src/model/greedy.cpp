#include "model/greedy.h"

#include <algorithm>

#include "ops/ops.h"

namespace flashdraft::model {

std::vector<int32_t> greedy_continue(Qwen3Model& model, KVCache& cache, std::span<const int32_t> prompt,
                                     int64_t max_new, std::span<const int64_t> stop_ids) {
  std::vector<int32_t> out;
  if (max_new <= 0) return out;
  std::vector<float> logits;
  model.forward(prompt, cache, logits);
  const int64_t vocab = model.config().vocab_size;
  while (true) {
    const auto next = static_cast<int32_t>(ops::cpu::argmax(logits.data(), vocab));
    out.push_back(next);
    if (static_cast<int64_t>(out.size()) >= max_new ||
        std::find(stop_ids.begin(), stop_ids.end(), next) != stop_ids.end())
      break;
    model.forward(std::span<const int32_t>(&out.back(), 1), cache, logits);
  }
  return out;
}

}  // namespace flashdraft::model
