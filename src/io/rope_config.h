#pragma once
// The RoPE fields of a config.json: the base (rope_theta) and the scaling type
// with its parameters, from either spelling transformers writes:
//   4.x: top-level rope_theta, rope_scaling {rope_type (or legacy type), ...}
//   5.x: rope_parameters {rope_type, rope_theta, ...}
// A file with both must agree on every field it gives twice. The tables these
// parameters produce are computed in model/rope_scaling.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "io/json_fields.h"

namespace flashdraft::io {

enum class RopeType { kDefault, kLinear, kLlama3, kYarn };
const char* rope_type_name(RopeType type);  // "default", "linear", "llama3", "yarn"

struct RopeConfig {
  double theta = 0;
  RopeType type = RopeType::kDefault;
  double factor = 1;  // linear, llama3, yarn
  // llama3: required; yarn: the pre-scaling context (default: max_position_embeddings).
  int64_t original_max_position_embeddings = 0;
  double low_freq_factor = 0, high_freq_factor = 0;  // llama3
  // yarn. attention_factor as given (else derived from factor and mscale);
  // betas, mscale and mscale_all_dim follow Python's `x or default`: 0 counts
  // as absent, as in transformers.
  std::optional<double> attention_factor;
  double beta_fast = 32, beta_slow = 1;
  double mscale = 0, mscale_all_dim = 0;
  bool truncate = true;
};

// Reads the RoPE fields of the config `f` reads (raw is the same object).
// Throws flashdraft::Error naming the file and field for: a missing or
// invalid rope_theta, a type other than the four above (dynamic, longrope,
// ... would change every attention score if ignored), a missing or invalid
// parameter of the type, per-layer-type RoPE parameters, a
// partial_rotary_factor other than 1, and two spellings that disagree.
RopeConfig read_rope_config(const JsonFields& f, const nlohmann::json& raw, int64_t max_position_embeddings);

}  // namespace flashdraft::io
