#include "server/choice_set.h"

#include "core/error.h"
#include "server/api_error.h"

namespace flashdraft::server {

void ChoiceSet::add(ServingModel& model, const std::vector<int32_t>& prompt, const engine::SamplingParams& params,
                    int n, bool skip_special_tokens, Metrics& metrics) {
  for (int i = 0; i < n; ++i) {
    engine::SamplingParams p = params;
    if (p.seed) p.seed = *p.seed + static_cast<uint64_t>(i);
    try {
      choices_.push_back(
          std::make_unique<ChoiceStream>(*model.generator, prompt, p, model.tokenizer, skip_special_tokens, &metrics));
    } catch (const Error& e) {
      throw ApiError(503, std::string("the server is shutting down: ") + e.what());
    }
  }
}

bool ChoiceSet::finished() const {
  for (const auto& c : choices_) {
    if (!c->finished()) return false;
  }
  return true;
}

bool ChoiceSet::wait(const Client& client, const std::function<void(size_t, const ChoiceProgress&)>& on_progress) {
  if (client.gone && client.gone()) return false;
  // One request: block on it. Several: take turns, briefly each.
  size_t open = 0;
  for (const auto& c : choices_) open += c->finished() ? 0 : 1;
  const auto timeout = std::chrono::milliseconds(open <= 1 ? 50 : 5);
  for (size_t i = 0; i < choices_.size(); ++i) {
    if (choices_[i]->finished()) continue;
    if (std::optional<ChoiceProgress> p = choices_[i]->next(timeout)) on_progress(i, *p);
  }
  return true;
}

bool ChoiceSet::wait_all(const Client& client, const std::function<void(size_t, const ChoiceProgress&)>& on_progress) {
  while (!finished()) {
    if (!wait(client, on_progress)) return false;
  }
  return true;
}

int64_t ChoiceSet::completion_tokens() const {
  int64_t n = 0;
  for (const auto& c : choices_) n += c->completion_tokens();
  return n;
}

}  // namespace flashdraft::server
