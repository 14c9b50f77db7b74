#include "cli/sampling_setup.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "serving/generation_defaults.h"

namespace flashdraft::cli {
namespace {

engine::SamplingParams defaults(const io::GenerationConfig& g) { return serving::sampling_defaults(g); }

io::GenerationConfig qwen_like() {
  io::GenerationConfig g;
  g.temperature = 0.6;
  g.top_p = 0.95;
  g.top_k = 20;
  g.do_sample = true;
  g.eos_token_ids = {151645, 151643};
  return g;
}

TEST(ResolveSampling, ModelDefaultsApplyWhenNoFlagIsGiven) {
  auto p = resolve_sampling(defaults(qwen_like()), {});
  EXPECT_DOUBLE_EQ(p.temperature, 0.6);
  EXPECT_DOUBLE_EQ(p.top_p, 0.95);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_DOUBLE_EQ(p.min_p, 0.0);
  EXPECT_EQ(p.max_tokens, kDefaultMaxTokens);
  EXPECT_FALSE(p.seed.has_value());
}

TEST(ResolveSampling, FlagsOverrideModelDefaults) {
  SamplingFlags f;
  f.temperature = 0.0;
  f.top_p = 0.5;
  f.top_k = 3;
  f.min_p = 0.1;
  f.max_tokens = 7;
  f.seed = 99;
  f.stop = {"END"};
  f.ignore_eos = true;
  auto p = resolve_sampling(defaults(qwen_like()), f);
  EXPECT_DOUBLE_EQ(p.temperature, 0.0);
  EXPECT_DOUBLE_EQ(p.top_p, 0.5);
  EXPECT_EQ(p.top_k, 3);
  EXPECT_DOUBLE_EQ(p.min_p, 0.1);
  EXPECT_EQ(p.max_tokens, 7);
  EXPECT_EQ(p.seed, 99u);
  EXPECT_EQ(p.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(p.ignore_eos);
}

TEST(ResolveSampling, PenaltyFlags) {
  io::GenerationConfig g = qwen_like();
  g.repetition_penalty = 1.05;
  EXPECT_DOUBLE_EQ(resolve_sampling(defaults(g), {}).repetition_penalty, 1.05);  // the model's default
  SamplingFlags f;
  f.presence_penalty = 0.5;
  f.frequency_penalty = -1.5;
  f.repetition_penalty = 1.2;
  auto p = resolve_sampling(defaults(g), f);
  EXPECT_DOUBLE_EQ(p.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(p.frequency_penalty, -1.5);
  EXPECT_DOUBLE_EQ(p.repetition_penalty, 1.2);
  for (auto bad : {+[](SamplingFlags& x) { x.presence_penalty = 2.5; }, +[](SamplingFlags& x) { x.frequency_penalty = -3; },
                   +[](SamplingFlags& x) { x.repetition_penalty = 0; }}) {
    SamplingFlags b;
    bad(b);
    EXPECT_THROW(check_sampling_flags(b), UsageError);
  }
}

TEST(ResolveSampling, MaxNewTokensFromGenerationConfigIsTheDefault) {
  io::GenerationConfig g;
  g.max_new_tokens = 33;
  EXPECT_EQ(resolve_sampling(defaults(g), {}).max_tokens, 33);
  SamplingFlags f;
  f.max_tokens = 0;
  EXPECT_EQ(resolve_sampling(defaults(g), f).max_tokens, 0);
}

TEST(ResolveSampling, DoSampleFalseMeansGreedyUnlessTheFlagSaysOtherwise) {
  io::GenerationConfig g = qwen_like();
  g.do_sample = false;
  EXPECT_DOUBLE_EQ(resolve_sampling(defaults(g), {}).temperature, 0.0);
  SamplingFlags f;
  f.temperature = 0.8;
  EXPECT_DOUBLE_EQ(resolve_sampling(defaults(g), f).temperature, 0.8);
}

void expect_usage_error(const SamplingFlags& f, const std::string& flag) {
  try {
    resolve_sampling(defaults({}), f);
    FAIL() << "expected a usage error for " << flag;
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(flag + ":", 0), 0u) << e.what();
  }
}

TEST(ResolveSampling, OutOfRangeFlagsAreUsageErrorsNamingTheFlag) {
  SamplingFlags f;
  f.max_tokens = -1;
  expect_usage_error(f, "--max-tokens");
  f = {};
  f.temperature = -0.1;
  expect_usage_error(f, "--temperature");
  f = {};
  f.temperature = std::numeric_limits<double>::quiet_NaN();
  expect_usage_error(f, "--temperature");
  for (double bad : {0.0, -0.5, 1.0001}) {
    f = {};
    f.top_p = bad;
    expect_usage_error(f, "--top-p");
  }
  f = {};
  f.top_k = -2;
  expect_usage_error(f, "--top-k");
  for (double bad : {-0.01, 1.5}) {
    f = {};
    f.min_p = bad;
    expect_usage_error(f, "--min-p");
  }
  f = {};
  f.stop = {"ok", ""};
  expect_usage_error(f, "--stop");
}

TEST(ResolveSampling, EdgeValuesAreAccepted) {
  SamplingFlags f;
  f.top_p = 1.0;
  f.min_p = 1.0;
  f.top_k = 0;
  f.temperature = 0.0;
  f.max_tokens = 0;
  EXPECT_NO_THROW(resolve_sampling(defaults({}), f));
}

TEST(ResolveSampling, BadModelDefaultIsAnErrorNamingGenerationConfigNotAFlag) {
  io::GenerationConfig g;
  g.top_p = 2.0;
  try {
    resolve_sampling(defaults(g), {});
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    FAIL() << "a model file problem is not a usage error: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("generation_config.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flashdraft::cli
