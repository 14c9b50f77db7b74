// Compiled with -ffp-contract=off (see ops/penalty_math.h): a penalised
// logit must be the device's bit for bit.
#include "ops/cpu/penalize.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "ops/penalty_math.h"

namespace flashdraft::ops::cpu {
namespace {

float bits_float(int32_t w) {
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

}  // namespace

void penalize_row(float* logits, int64_t vocab, const PenaltyRow& row, const int32_t* items, const int32_t* drafts) {
  constexpr int kW = penalty_math::kItemWords;
  const int32_t* drafts_end = drafts + row.drafts_count;
  auto apply = [&](int32_t token, float bias, bool seen, int32_t count) {
    if (token < 0 || token >= vocab) {
      throw Error("cpu backend penalize: token " + std::to_string(token) + " is outside the vocabulary [0, " +
                  std::to_string(vocab) + ")");
    }
    float& l = logits[token];
    l = penalty_math::penalized(l, bias, seen, count, row.repetition, row.frequency, row.presence);
  };
  for (int32_t i = 0; i < row.items_count; ++i) {
    const int32_t* item = items + i * kW;
    const auto extra = static_cast<int32_t>(std::count(drafts, drafts_end, item[0]));
    apply(item[0], bits_float(item[2]), item[1] >= 0 || extra > 0, std::max(item[1], 0) + extra);
  }
  // Drafts that are new to the row's history: each once, at its first occurrence.
  auto in_items = [&](int32_t token) {
    int32_t lo = 0, hi = row.items_count;
    while (lo < hi) {
      const int32_t mid = (lo + hi) / 2;
      if (items[mid * kW] < token) lo = mid + 1;
      else hi = mid;
    }
    return lo < row.items_count && items[lo * kW] == token;
  };
  for (const int32_t* d = drafts; d != drafts_end; ++d) {
    if (std::find(drafts, d, *d) != d || in_items(*d)) continue;
    apply(*d, 0.0f, true, static_cast<int32_t>(std::count(d, drafts_end, *d)));
  }
}

}  // namespace flashdraft::ops::cpu
