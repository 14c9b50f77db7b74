#include "serving/generation_defaults.h"

#include <algorithm>
#include <limits>

#include "tokenizer/tokenizer.h"

namespace flashdraft::serving {

engine::SamplingParams sampling_defaults(const io::GenerationConfig& g) {
  engine::SamplingParams p;
  if (g.temperature) p.temperature = *g.temperature;
  if (g.do_sample == false) p.temperature = 0.0;
  if (g.top_k && *g.top_k > 0) {
    p.top_k = static_cast<int>(std::min<int64_t>(*g.top_k, std::numeric_limits<int>::max()));
  }
  if (g.top_p) p.top_p = *g.top_p;
  if (g.min_p) p.min_p = *g.min_p;
  if (g.repetition_penalty) p.repetition_penalty = *g.repetition_penalty;
  if (g.max_new_tokens) {
    p.max_tokens = static_cast<int>(std::min<int64_t>(*g.max_new_tokens, std::numeric_limits<int>::max()));
  }
  return p;
}

std::vector<int32_t> eos_token_ids(const io::ModelConfig& model, const io::GenerationConfig& generation,
                                   const tokenizer::Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  auto add = [&](int64_t id) {
    const auto v = static_cast<int32_t>(id);
    if (std::find(ids.begin(), ids.end(), v) == ids.end()) ids.push_back(v);
  };
  for (int64_t id : generation.eos_token_ids) add(id);
  for (int64_t id : model.eos_token_ids) add(id);
  if (auto id = tokenizer.eos_token_id()) add(*id);
  return ids;
}

engine::SamplingParams SamplingOverrides::applied_to(const engine::SamplingParams& defaults) const {
  engine::SamplingParams p = defaults;
  if (temperature) p.temperature = *temperature;
  if (top_p) p.top_p = *top_p;
  if (top_k) p.top_k = *top_k;
  if (min_p) p.min_p = *min_p;
  if (presence_penalty) p.presence_penalty = *presence_penalty;
  if (frequency_penalty) p.frequency_penalty = *frequency_penalty;
  if (repetition_penalty) p.repetition_penalty = *repetition_penalty;
  return p;
}

}  // namespace flashdraft::serving
