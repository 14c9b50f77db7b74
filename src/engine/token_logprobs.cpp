#include "engine/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace flashdraft::engine {

TokenLogprobs token_logprobs(const float* logits, int64_t vocab, int32_t token, int top_n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < vocab; ++j) max = std::max(max, logits[j]);
  double sum = 0;
  for (int64_t j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(logits[j]) - max);
  const double log_z = static_cast<double>(max) + std::log(sum);
  auto logprob = [&](int64_t j) { return static_cast<float>(static_cast<double>(logits[j]) - log_z); };

  TokenLogprobs out;
  out.token = token;
  out.logprob = token >= 0 && token < vocab ? logprob(token) : -std::numeric_limits<float>::infinity();
  // The top_n largest logits: a sorted list kept short (top_n <= 20), most
  // likely first, ties to the lower id.
  const auto n = static_cast<size_t>(std::clamp<int64_t>(top_n, 0, vocab));
  std::vector<int32_t> best;
  best.reserve(n + 1);
  auto before = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  for (int64_t j = 0; j < vocab && n > 0; ++j) {
    const auto id = static_cast<int32_t>(j);
    if (best.size() == n && !before(id, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), id, before), id);
    if (best.size() > n) best.pop_back();
  }
  for (int32_t id : best) out.top.push_back({id, logprob(id)});
  return out;
}

}  // namespace flashdraft::engine
