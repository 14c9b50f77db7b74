#include "serving/speculative_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"

namespace flashdraft::serving {
namespace {

TEST(SpeculativeConfig, ReadsTheVllmSpelling) {
  auto s = parse_speculative_config(R"({"method":"dflash","model":"models/drafter-full","num_speculative_tokens":7})");
  EXPECT_EQ(s.draft_model, "models/drafter-full");
  ASSERT_TRUE(s.num_speculative_tokens.has_value());
  EXPECT_EQ(*s.num_speculative_tokens, 7);
  auto d = parse_speculative_config(R"({"method":"dflash","model":"D"})");
  EXPECT_FALSE(d.num_speculative_tokens.has_value());
  EXPECT_TRUE(d.adaptive);  // adaptive draft lengths by default
  EXPECT_FALSE(parse_speculative_config(R"({"method":"dflash","model":"D","adaptive":false})").adaptive);
  EXPECT_EQ(d.revision, "main");  // of a hub id
  EXPECT_EQ(parse_speculative_config(R"({"method":"dflash","model":"Org/D","revision":"v2"})").revision, "v2");
  EXPECT_EQ(d.quantization, "");  // the drafter's weights as loaded
  EXPECT_EQ(parse_speculative_config(R"({"method":"dflash","model":"D","quantization":"fp8"})").quantization, "fp8");
  EXPECT_EQ(parse_speculative_config(R"({"method":"dflash","model":"D","quantization":null})").quantization, "");
}

void expect_usage_error(const std::string& json, const std::string& needle) {
  try {
    parse_speculative_config(json);
    ADD_FAILURE() << "accepted " << json;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--speculative-config"), std::string::npos) << e.what();
  }
}

TEST(SpeculativeConfig, BadInputIsAUsageErrorSayingWhat) {
  expect_usage_error(R"({"method":"dflash",)", "not valid JSON");
  expect_usage_error(R"(["dflash"])", "JSON object");
  expect_usage_error(R"({"method":"eagle3","model":"D"})", "unknown method \"eagle3\"");
  expect_usage_error(R"({"model":"D"})", "\"method\"");
  expect_usage_error(R"({"method":"dflash"})", "\"model\"");
  expect_usage_error(R"({"method":"dflash","model":3})", "\"model\"");
  expect_usage_error(R"({"method":"dflash","model":"D","num_speculative_tokens":0})", "num_speculative_tokens");
  expect_usage_error(R"({"method":"dflash","model":"D","num_speculative_tokens":2.5})", "num_speculative_tokens");
  expect_usage_error(R"({"method":"dflash","model":"D","adaptive":"off"})", "\"adaptive\" must be true or false");
  expect_usage_error(R"({"method":"dflash","model":"D","draft_tensor_parallel_size":1})", "unknown key");
  expect_usage_error(R"({"method":"dflash","model":"D","revision":""})", "\"revision\" must be");
  expect_usage_error(R"({"method":"dflash","model":"D","revision":7})", "\"revision\" must be");
  expect_usage_error(R"({"method":"dflash","model":"D","quantization":"int4"})", "\"quantization\" must be \"fp8\"");
  expect_usage_error(R"({"method":"dflash","model":"D","quantization":8})", "\"quantization\" must be \"fp8\"");
}

}  // namespace
}  // namespace flashdraft::serving

namespace flashdraft::serving {
namespace {

const std::string kDrafter = FD_SOURCE_DIR "/models/drafter-full";

void expect_setup_error(const std::optional<std::string>& draft, const std::optional<int>& k,
                        const std::optional<std::string>& json, const std::string& needle) {
  try {
    speculative_setup(draft, k, json);
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(SpeculativeSetup, EitherSpellingNamesTheDrafterByItsAbsolutePath) {
  EXPECT_TRUE(speculative_setup(std::nullopt, std::nullopt, std::nullopt).draft_model.empty());
  SpeculativeSetup flags = speculative_setup(kDrafter, 5, std::nullopt);
  EXPECT_TRUE(std::filesystem::path(flags.draft_model).is_absolute());
  EXPECT_EQ(flags.num_speculative_tokens, 5);
  SpeculativeSetup json =
      speculative_setup(std::nullopt, std::nullopt, R"({"method":"dflash","model":")" + kDrafter + R"("})");
  EXPECT_EQ(json.draft_model, flags.draft_model);
  EXPECT_FALSE(json.num_speculative_tokens.has_value());
}

TEST(SpeculativeSetup, DraftQuantizationFlag) {
  EXPECT_EQ(speculative_setup(kDrafter, std::nullopt, std::nullopt, true, "fp8").quantization, "fp8");
  EXPECT_EQ(speculative_setup(kDrafter, std::nullopt, std::nullopt).quantization, "");
  const auto error = [](const std::optional<std::string>& draft, const std::optional<std::string>& json,
                        const std::string& quant, const std::string& needle) {
    try {
      speculative_setup(draft, std::nullopt, json, true, quant);
      ADD_FAILURE() << "accepted " << quant;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  error(kDrafter, std::nullopt, "int8", "expected fp8");
  error(std::nullopt, std::nullopt, "fp8", "needs --draft-model");
  error(std::nullopt, R"({"method":"dflash","model":")" + kDrafter + R"("})", "fp8", "do not combine");
}

TEST(SpeculativeSetup, ConflictingOrIncompleteFlagsAreUsageErrors) {
  expect_setup_error(kDrafter, std::nullopt, R"({"method":"dflash","model":"x"})", "do not combine");
  expect_setup_error(std::nullopt, 4, std::nullopt, "needs --draft-model");
  expect_setup_error(kDrafter, 0, std::nullopt, "--num-speculative-tokens: must be >= 1");
  expect_setup_error(std::string(FD_SOURCE_DIR "/no/such/dir"), std::nullopt, std::nullopt, "no such directory");
  expect_setup_error(std::string(FD_SOURCE_DIR "/models"), std::nullopt, std::nullopt, "no config.json");
  expect_setup_error(std::nullopt, std::nullopt, R"({"method":"dflash","model":"/no/such/dir"})",
                     "--speculative-config model: no such directory");
}

}  // namespace
}  // namespace flashdraft::serving
