#include "cli/speculative_config.h"

#include <gtest/gtest.h>

#include "cli/prompts_file.h"
#include "core/error.h"

namespace flashdraft::cli {
namespace {

TEST(SpeculativeConfig, ReadsTheVllmSpelling) {
  auto s = parse_speculative_config(R"({"method":"dflash","model":"models/drafter-full","num_speculative_tokens":7})");
  EXPECT_EQ(s.draft_model, "models/drafter-full");
  ASSERT_TRUE(s.num_speculative_tokens.has_value());
  EXPECT_EQ(*s.num_speculative_tokens, 7);
  auto d = parse_speculative_config(R"({"method":"dflash","model":"D"})");
  EXPECT_FALSE(d.num_speculative_tokens.has_value());
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
  expect_usage_error(R"({"method":"dflash","model":"D","draft_tensor_parallel_size":1})", "unknown key");
}

}  // namespace
}  // namespace flashdraft::cli
