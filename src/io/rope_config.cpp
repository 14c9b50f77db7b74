#include "io/rope_config.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "io/json_text.h"

namespace flashdraft::io {

namespace {

using nlohmann::json;

const char* kSupported = "supported: default, linear, llama3, yarn";

// The scaling object the parameters are read from: rope_parameters (5.x),
// else rope_scaling (4.x), else an empty one; with both, their union after
// checking that every shared key agrees.
json merged_scaling(const JsonFields& f, const json& raw) {
  const bool has_scaling = f.has("rope_scaling"), has_params = f.has("rope_parameters");
  if (has_scaling && !raw["rope_scaling"].is_object())
    f.fail("rope_scaling", "expected an object or null, found " + json_excerpt(raw["rope_scaling"]));
  if (!has_params) return has_scaling ? raw["rope_scaling"] : json::object();
  const json& params = raw["rope_parameters"];
  if (!params.is_object()) f.fail("rope_parameters", "expected an object, found " + json_excerpt(params));
  for (const auto& [key, value] : params.items()) {
    if (value.is_object()) {
      f.fail("rope_parameters." + key,
             "per-layer-type RoPE parameters are not supported (expected one set of parameters for every layer)");
    }
  }
  json merged = params;
  if (has_scaling) {
    for (const auto& [key, value] : raw["rope_scaling"].items()) {
      auto it = params.find(key);
      if (it == params.end()) {
        merged[key] = value;
      } else if (*it != value) {
        f.fail("rope_parameters." + key,
               json_excerpt(*it) + " disagrees with rope_scaling." + key + " = " + json_excerpt(value));
      }
    }
  }
  return merged;
}

double positive(const JsonFields& r, const std::string& key, double v) {
  if (!(v > 0) || !std::isfinite(v)) r.fail(key, "expected a positive number, found " + json_excerpt(v));
  return v;
}

double required_positive(const JsonFields& r, const std::string& key) {
  return positive(r, key, r.required_number(key));
}

double read_theta(const JsonFields& f, const JsonFields& r) {
  std::optional<double> theta = f.optional_number("rope_theta");
  std::optional<double> nested = r.optional_number("rope_theta");
  if (theta && nested && *theta != *nested) {
    f.fail("rope_theta", "top-level value " + json_excerpt(*theta) + " disagrees with rope_parameters.rope_theta = " +
                             json_excerpt(*nested));
  }
  if (!theta) theta = nested;
  if (!theta) f.fail("rope_theta", "missing (required: a number, top level or in rope_parameters)");
  if (!(*theta > 0) || !std::isfinite(*theta)) f.fail("rope_theta", "expected a positive number, found " + json_excerpt(*theta));
  return *theta;
}

RopeType read_type(const JsonFields& r) {
  auto type = r.optional_string("rope_type");
  auto legacy = r.optional_string("type");  // transformers maps the old key to rope_type
  if (type && legacy && *type != *legacy)
    r.fail("rope_type", "\"" + *type + "\" disagrees with the legacy key type = \"" + *legacy + "\"");
  const std::string name = type ? *type : legacy.value_or("default");
  const std::string key = type || !legacy ? "rope_type" : "type";
  if (name == "default") return RopeType::kDefault;
  if (name == "linear") return RopeType::kLinear;
  if (name == "llama3") return RopeType::kLlama3;
  if (name == "yarn") return RopeType::kYarn;
  r.fail(key, "RoPE type \"" + name + "\" is not supported (" + kSupported + ")");
}

void read_partial_rotary_factor(const JsonFields& f, const JsonFields& r) {
  for (const JsonFields* src : {&f, &r}) {
    auto p = src->optional_number("partial_rotary_factor");
    if (p && *p != 1.0) {
      src->fail("partial_rotary_factor", "only 1 is supported (RoPE over the whole head), found " + json_excerpt(*p));
    }
  }
}

int64_t positive_int(const JsonFields& r, const std::string& key, int64_t v) {
  if (v <= 0) r.fail(key, "expected a positive integer, found " + std::to_string(v));
  return v;
}

}  // namespace

const char* rope_type_name(RopeType type) {
  switch (type) {
    case RopeType::kDefault: return "default";
    case RopeType::kLinear: return "linear";
    case RopeType::kLlama3: return "llama3";
    case RopeType::kYarn: return "yarn";
  }
  return "?";
}

RopeConfig read_rope_config(const JsonFields& f, const json& raw, int64_t max_position_embeddings) {
  const json scaling = merged_scaling(f, raw);
  const JsonFields r(scaling, f.source(), f.has("rope_parameters") ? "rope_parameters." : "rope_scaling.");
  RopeConfig c;
  c.theta = read_theta(f, r);
  c.type = read_type(r);
  read_partial_rotary_factor(f, r);
  switch (c.type) {
    case RopeType::kDefault:
      break;
    case RopeType::kLinear:
      c.factor = required_positive(r, "factor");
      break;
    case RopeType::kLlama3:
      c.factor = required_positive(r, "factor");
      c.low_freq_factor = required_positive(r, "low_freq_factor");
      c.high_freq_factor = required_positive(r, "high_freq_factor");
      if (!(c.high_freq_factor > c.low_freq_factor)) {
        r.fail("high_freq_factor", "expected more than low_freq_factor (" + json_excerpt(c.low_freq_factor) +
                                       "), found " + json_excerpt(c.high_freq_factor));
      }
      c.original_max_position_embeddings =
          positive_int(r, "original_max_position_embeddings", r.required_int("original_max_position_embeddings"));
      break;
    case RopeType::kYarn:
      // transformers 4.x replaced factor by max_position_embeddings /
      // original_max_position_embeddings when the latter is given; 5.x and
      // vLLM use the configured factor, as here.
      c.factor = required_positive(r, "factor");
      c.original_max_position_embeddings =
          positive_int(r, "original_max_position_embeddings",
                       r.optional_int("original_max_position_embeddings").value_or(max_position_embeddings));
      if (auto a = r.optional_number("attention_factor")) c.attention_factor = positive(r, "attention_factor", *a);
      if (auto b = r.optional_number("beta_fast"); b && *b != 0) c.beta_fast = positive(r, "beta_fast", *b);
      if (auto b = r.optional_number("beta_slow"); b && *b != 0) c.beta_slow = positive(r, "beta_slow", *b);
      c.mscale = r.optional_number("mscale").value_or(0);
      c.mscale_all_dim = r.optional_number("mscale_all_dim").value_or(0);
      c.truncate = r.optional_bool("truncate").value_or(true);
      break;
  }
  return c;
}

}  // namespace flashdraft::io
