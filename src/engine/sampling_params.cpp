#include "engine/sampling_params.h"

#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"

namespace flashdraft::engine {

void validate(const SamplingParams& params) {
  auto fail = [](const std::string& what) { throw Error("sampling parameter " + what); };
  if (!(params.temperature >= 0) || !std::isfinite(params.temperature)) {
    fail("temperature: expected a finite number >= 0, found " + std::to_string(params.temperature));
  }
  if (params.top_k < 0) fail("top_k: expected >= 0 (0 = off), found " + std::to_string(params.top_k));
  if (!(params.top_p > 0 && params.top_p <= 1)) {
    fail("top_p: expected 0 < top_p <= 1, found " + std::to_string(params.top_p));
  }
  if (!(params.min_p >= 0 && params.min_p <= 1)) {
    fail("min_p: expected 0 <= min_p <= 1, found " + std::to_string(params.min_p));
  }
  for (auto [name, v] : {std::pair{"presence_penalty", params.presence_penalty},
                         std::pair{"frequency_penalty", params.frequency_penalty}}) {
    if (!(v >= -2 && v <= 2)) fail(std::string(name) + ": expected -2 <= value <= 2, found " + std::to_string(v));
  }
  if (!(params.repetition_penalty > 0) || !std::isfinite(params.repetition_penalty)) {
    fail("repetition_penalty: expected a finite number > 0 (1 = off), found " +
         std::to_string(params.repetition_penalty));
  }
  for (const auto& [token, bias] : params.logit_bias) {
    if (token < 0) fail("logit_bias: token id " + std::to_string(token) + " is negative");
    if (!(bias >= -100 && bias <= 100)) {
      fail("logit_bias: the bias of token " + std::to_string(token) + " must be in [-100, 100], found " +
           std::to_string(bias));
    }
  }
  if (params.logprobs && (*params.logprobs < 0 || *params.logprobs > SamplingParams::kMaxLogprobs)) {
    fail("logprobs: expected 0 to " + std::to_string(SamplingParams::kMaxLogprobs) + " alternatives, found " +
         std::to_string(*params.logprobs));
  }
}

}  // namespace flashdraft::engine
