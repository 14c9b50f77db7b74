#pragma once
// The choices of one response (prompts x n engine requests) and the loop
// that waits on them. Dropping the set aborts every unfinished request.
#include <functional>
#include <memory>
#include <vector>

#include "server/choice_stream.h"
#include "server/endpoints.h"

namespace flashdraft::server {

class ChoiceSet {
 public:
  // Submits `n` requests for `prompt` (seeded seed, seed + 1, ... as vLLM's n
  // does) after those already in the set. Throws ApiError 503 when the
  // generator takes no more requests (shutting down).
  void add(ServingModel& model, const std::vector<int32_t>& prompt, const engine::SamplingParams& params, int n,
           bool skip_special_tokens, Metrics& metrics);

  size_t size() const { return choices_.size(); }
  ChoiceStream& operator[](size_t i) { return *choices_[i]; }
  bool finished() const;

  // Waits once on every unfinished choice and calls on_progress(i, progress)
  // for each that moved. False (nothing aborted yet) when client.gone().
  bool wait(const Client& client, const std::function<void(size_t, const ChoiceProgress&)>& on_progress);
  // Waits until every choice finished; false when the client went away first.
  bool wait_all(const Client& client, const std::function<void(size_t, const ChoiceProgress&)>& on_progress);

  int64_t completion_tokens() const;

 private:
  std::vector<std::unique_ptr<ChoiceStream>> choices_;
};

}  // namespace flashdraft::server
