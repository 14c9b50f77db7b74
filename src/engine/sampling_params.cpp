#include "engine/sampling_params.h"

#include <cmath>
#include <string>

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
}

}  // namespace flashdraft::engine
