// RoPE fields of config.json in both transformers spellings (io/rope_config).
#include "io/rope_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "io/model_config.h"

namespace flashdraft::io {
namespace {

using nlohmann::json;
using testing::expect_error;

// The fields parse_model_config requires, with plain RoPE.
json base_config() {
  return {{"model_type", "llama"},
          {"vocab_size", 128},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"rms_norm_eps", 1e-5},
          {"max_position_embeddings", 131072},
          {"rope_theta", 500000.0}};
}

RopeConfig rope_of(const json& j) { return parse_model_config(j.dump(), "m/config.json").rope; }

TEST(RopeConfig, AbsentOrNullScalingIsDefault) {
  json j = base_config();
  EXPECT_EQ(rope_of(j).type, RopeType::kDefault);
  EXPECT_EQ(rope_of(j).theta, 500000.0);
  j["rope_scaling"] = nullptr;
  EXPECT_EQ(rope_of(j).type, RopeType::kDefault);
  j["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_EQ(rope_of(j).type, RopeType::kDefault);
}

TEST(RopeConfig, Llama3FromEitherSpelling) {
  const json scaling = {{"rope_type", "llama3"},
                        {"factor", 8.0},
                        {"low_freq_factor", 1.0},
                        {"high_freq_factor", 4.0},
                        {"original_max_position_embeddings", 8192}};
  json v4 = base_config();
  v4["rope_scaling"] = scaling;
  json v5 = base_config();
  v5.erase("rope_theta");
  v5["rope_parameters"] = scaling;
  v5["rope_parameters"]["rope_theta"] = 500000.0;
  for (const json& j : {v4, v5}) {
    const RopeConfig c = rope_of(j);
    EXPECT_EQ(c.type, RopeType::kLlama3);
    EXPECT_EQ(c.theta, 500000.0);
    EXPECT_EQ(c.factor, 8.0);
    EXPECT_EQ(c.low_freq_factor, 1.0);
    EXPECT_EQ(c.high_freq_factor, 4.0);
    EXPECT_EQ(c.original_max_position_embeddings, 8192);
  }
}

TEST(RopeConfig, YarnDefaultsAsTransformers) {
  json j = base_config();
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"beta_fast", 0}};  // legacy key; 0 means "unset"
  RopeConfig c = rope_of(j);
  EXPECT_EQ(c.type, RopeType::kYarn);
  EXPECT_EQ(c.original_max_position_embeddings, 131072);  // max_position_embeddings
  EXPECT_FALSE(c.attention_factor.has_value());
  EXPECT_EQ(c.beta_fast, 32.0);
  EXPECT_EQ(c.beta_slow, 1.0);
  EXPECT_TRUE(c.truncate);
  j["rope_scaling"] = {{"rope_type", "yarn"},   {"factor", 4.0},  {"original_max_position_embeddings", 32768},
                       {"attention_factor", 1.2}, {"beta_fast", 16}, {"beta_slow", 2},
                       {"mscale", 0.7},          {"mscale_all_dim", 1}, {"truncate", false}};
  c = rope_of(j);
  EXPECT_EQ(c.original_max_position_embeddings, 32768);
  EXPECT_EQ(c.attention_factor, 1.2);
  EXPECT_EQ(c.beta_fast, 16.0);
  EXPECT_EQ(c.beta_slow, 2.0);
  EXPECT_EQ(c.mscale, 0.7);
  EXPECT_EQ(c.mscale_all_dim, 1.0);
  EXPECT_FALSE(c.truncate);
}

TEST(RopeConfig, BothSpellingsMustAgree) {
  json j = base_config();
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 500000.0}};
  EXPECT_EQ(rope_of(j).factor, 2.0);
  j["rope_parameters"]["factor"] = 3.0;
  expect_error([&] { rope_of(j); }, {"m/config.json", "\"rope_parameters.factor\"", "3.0", "rope_scaling.factor"});
  j = base_config();
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  expect_error([&] { rope_of(j); }, {"\"rope_theta\"", "500000", "disagrees"});
  j = base_config();
  j["rope_scaling"] = {{"rope_type", "linear"}, {"type", "yarn"}, {"factor", 2.0}};
  expect_error([&] { rope_of(j); }, {"\"rope_scaling.rope_type\"", "\"linear\"", "\"yarn\""});
}

TEST(RopeConfig, UnsupportedTypesAndFieldsAreRefusedByName) {
  for (const char* type : {"dynamic", "longrope", "proportional", "mrope"}) {
    json j = base_config();
    j["rope_scaling"] = {{"rope_type", type}, {"factor", 2.0}};
    expect_error([&] { rope_of(j); },
                 {"m/config.json", "\"rope_scaling.rope_type\"", std::string("\"") + type + "\"", "not supported",
                  "default, linear, llama3, yarn"});
  }
  json j = base_config();
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_type", "su"}, {"rope_theta", 1.0}};
  expect_error([&] { rope_of(j); }, {"\"rope_parameters.rope_type\"", "\"su\""});
  j = base_config();
  j["partial_rotary_factor"] = 0.5;
  expect_error([&] { rope_of(j); }, {"\"partial_rotary_factor\"", "0.5"});
  j = base_config();
  j.erase("rope_theta");
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e6}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
  expect_error([&] { rope_of(j); }, {"\"rope_parameters.full_attention\"", "per-layer-type"});
  j = base_config();
  j["rope_scaling"] = "yarn";
  expect_error([&] { rope_of(j); }, {"\"rope_scaling\"", "expected an object"});
}

TEST(RopeConfig, MissingOrInvalidParametersNameTheField) {
  struct Case {
    json scaling;
    std::string field, problem;
  };
  const json llama3 = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  std::vector<Case> cases = {
      {{{"rope_type", "linear"}}, "factor", "missing"},
      {{{"rope_type", "linear"}, {"factor", -2.0}}, "factor", "positive"},
      {{{"rope_type", "linear"}, {"factor", "2"}}, "factor", "expected a number"},
      {{{"rope_type", "yarn"}}, "factor", "missing"},
      {{{"rope_type", "yarn"}, {"factor", 4.0}, {"attention_factor", 0.0}}, "attention_factor", "positive"},
      {{{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 0}},
       "original_max_position_embeddings", "positive"},
  };
  for (const char* key : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
    json s = llama3;
    s.erase(key);
    cases.push_back({s, key, "missing"});
  }
  json swapped = llama3;
  swapped["high_freq_factor"] = 1.0;
  cases.push_back({swapped, "high_freq_factor", "more than low_freq_factor"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scaling.dump());
    json j = base_config();
    j["rope_scaling"] = c.scaling;
    expect_error([&] { rope_of(j); }, {"m/config.json", "\"rope_scaling." + c.field + "\"", c.problem});
  }
}

}  // namespace
}  // namespace flashdraft::io
