#include "engine/acceptance.h"

#include <fmt/format.h>

#include <vector>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

void check_shape(std::span<const float> rows, int64_t vocab, std::span<const int32_t> drafts) {
  const auto k = static_cast<int64_t>(drafts.size());
  if (vocab <= 0 || static_cast<int64_t>(rows.size()) != (k + 1) * vocab) {
    throw Error(fmt::format("acceptance: expected {} rows of {} logits for {} drafts, got {} values", k + 1, vocab, k,
                            rows.size()));
  }
  for (int32_t d : drafts) {
    if (d < 0 || d >= vocab)
      throw Error(fmt::format("acceptance: draft token {} outside the vocabulary [0, {})", d, vocab));
  }
}

std::span<const float> row(std::span<const float> rows, int64_t vocab, int64_t i) {
  return rows.subspan(static_cast<size_t>(i * vocab), static_cast<size_t>(vocab));
}

}  // namespace

Acceptance accept_greedy(std::span<const float> rows, int64_t vocab, std::span<const int32_t> drafts) {
  check_shape(rows, vocab, drafts);
  const auto k = static_cast<int64_t>(drafts.size());
  for (int64_t i = 0; i < k; ++i) {
    const int32_t target = argmax(row(rows, vocab, i));
    if (target != drafts[static_cast<size_t>(i)]) return {static_cast<int32_t>(i), target};
  }
  return {static_cast<int32_t>(k), argmax(row(rows, vocab, k))};
}

Acceptance accept_sampling(std::span<const float> rows, int64_t vocab, std::span<const int32_t> drafts,
                           Sampler& sampler) {
  check_shape(rows, vocab, drafts);
  const auto k = static_cast<int64_t>(drafts.size());
  for (int64_t i = 0; i < k; ++i) {
    std::vector<float> p = sampler.probs(row(rows, vocab, i));
    const int32_t d = drafts[static_cast<size_t>(i)];
    const double keep = p[static_cast<size_t>(d)];
    // keep == 1 always accepts (uniform() < 1), keep == 0 never does, so no
    // rejection ever meets an empty remainder.
    if (sampler.uniform() < keep) continue;
    p[static_cast<size_t>(d)] = 0.0f;
    return {static_cast<int32_t>(i), sampler.sample_from_probs(p)};
  }
  return {static_cast<int32_t>(k), sampler.sample(row(rows, vocab, k))};
}

Acceptance accept(std::span<const float> rows, int64_t vocab, std::span<const int32_t> drafts, Sampler& sampler) {
  if (sampler.params().temperature == 0.0) return accept_greedy(rows, vocab, drafts);
  return accept_sampling(rows, vocab, drafts, sampler);
}

}  // namespace flashdraft::engine
