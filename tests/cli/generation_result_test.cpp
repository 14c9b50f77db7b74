#include "engine/generation_result.h"

#include <gtest/gtest.h>

namespace flashdraft::engine {
namespace {

TEST(GenerationResult, ReportsSpeedsFromTheCountsItProduced) {
  GenerationResult r;
  r.prompt_tokens = 100;
  r.prefill_seconds = 0.5;
  r.tokens = {1, 2, 3, 4, 5};
  r.decode_seconds = 2.0;
  EXPECT_DOUBLE_EQ(r.prefill_tokens_per_second(), 200.0);
  EXPECT_DOUBLE_EQ(r.decode_tokens_per_second(), 2.0);  // 4 decoded tokens
  EXPECT_EQ(stop_reason_name(StopReason::kStopString), "stop_string");
}

TEST(GenerationResult, NoDecodeTimeOrSingleTokenGivesZeroSpeed) {
  GenerationResult r;
  r.tokens = {7};
  r.decode_seconds = 1.0;
  EXPECT_EQ(r.decode_tokens_per_second(), 0.0);
  EXPECT_EQ(r.prefill_tokens_per_second(), 0.0);
}

}  // namespace
}  // namespace flashdraft::engine
