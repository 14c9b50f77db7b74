#include "engine/penalty_history.h"

#include <algorithm>
#include <cstring>

#include "ops/penalty_math.h"

namespace flashdraft::engine {

PenaltyHistory::Item& PenaltyHistory::find_or_insert(int32_t token, int32_t count_if_new) {
  auto it = std::lower_bound(items_.begin(), items_.end(), token, [](const Item& a, int32_t t) { return a.token < t; });
  if (it == items_.end() || it->token != token) it = items_.insert(it, Item{token, count_if_new, 0.0f});
  return *it;
}

void PenaltyHistory::update(std::span<const int32_t> prompt, std::span<const int32_t> output,
                            const SamplingParams& params) {
  if (!built_) {
    items_.reserve(prompt.size() + params.logit_bias.size());
    for (int32_t t : prompt) items_.push_back({t, 0, 0.0f});
    std::sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) { return a.token < b.token; });
    items_.erase(std::unique(items_.begin(), items_.end(), [](const Item& a, const Item& b) { return a.token == b.token; }),
                 items_.end());
    // The last bias given for a token wins, as a JSON object's last key does.
    for (const auto& [token, bias] : params.logit_bias) find_or_insert(token, -1).bias = bias;
    built_ = true;
  }
  for (; folded_ < output.size(); ++folded_) {
    Item& item = find_or_insert(output[folded_], 0);
    item.count = std::max(item.count, 0) + 1;
  }
}

void PenaltyHistory::append_items(std::vector<int32_t>& out) const {
  static_assert(ops::penalty_math::kItemWords == 3);
  for (const Item& item : items_) {
    int32_t bias;
    std::memcpy(&bias, &item.bias, sizeof bias);
    out.insert(out.end(), {item.token, item.count, bias});
  }
}

}  // namespace flashdraft::engine
