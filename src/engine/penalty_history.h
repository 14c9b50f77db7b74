#pragma once
// What a request's penalties and logit bias need to know of its tokens, as
// the item list Backend::penalize reads (ops/backend.h): every token of the
// prompt, the output or the bias, sorted by id, with its output count (-1:
// only biased) and bias. Built on a request's first penalised step and then
// kept up to date one emitted token at a time, so a step costs the tokens
// emitted since the last, not the whole history.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampling_params.h"

namespace flashdraft::engine {

class PenaltyHistory {
 public:
  // Brings the list up to prompt + output (output only ever grows; the
  // prompt and params must be the same on every call).
  void update(std::span<const int32_t> prompt, std::span<const int32_t> output, const SamplingParams& params);
  // Appends the list's items (ops::penalty_math::kItemWords words each) to
  // `out`. Reads only: the ranks of a tensor-parallel runner call it at once.
  void append_items(std::vector<int32_t>& out) const;
  size_t size() const { return items_.size(); }

 private:
  struct Item {
    int32_t token;
    int32_t count;  // in the output; 0: prompt only; -1: neither (bias only)
    float bias;
  };
  Item& find_or_insert(int32_t token, int32_t count_if_new);

  std::vector<Item> items_;
  bool built_ = false;
  size_t folded_ = 0;  // output tokens already counted
};

}  // namespace flashdraft::engine
