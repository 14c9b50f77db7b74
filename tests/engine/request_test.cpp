#include "engine/request.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.seed = 1;
  return p;
}

TEST(Request, StatesAreInChronologicalOrder) {
  EXPECT_LT(RequestState::Waiting, RequestState::Prefilling);
  EXPECT_LT(RequestState::Prefilling, RequestState::Decoding);
  EXPECT_LT(RequestState::Decoding, RequestState::Finished);
  EXPECT_STREQ(request_state_name(RequestState::Decoding), "decoding");
  EXPECT_STREQ(finish_reason_name(FinishReason::Length), "length");
}

TEST(Request, InvalidSamplingParamsAreRejected) {
  SamplingParams p;
  p.top_p = 0;
  EXPECT_THROW(Request(1, {1, 2}, p), Error);
}

TEST(Request, PrefillThenDecodeKeepsTheAnchorUncomputed) {
  Request r(3, {10, 11, 12, 13, 14}, greedy(8));
  EXPECT_EQ(r.state, RequestState::Waiting);
  EXPECT_EQ(r.prefill_remaining(), 5);
  r.state = RequestState::Prefilling;  // the scheduler's admission

  r.on_prefill(3, std::nullopt);
  EXPECT_EQ(r.num_computed, 3);
  EXPECT_EQ(r.state, RequestState::Prefilling);
  EXPECT_THROW(r.on_prefill(2, std::nullopt), std::logic_error);  // the last chunk needs its token
  EXPECT_THROW(r.on_prefill(3, 99), std::logic_error);            // more rows than remain
  EXPECT_THROW(r.anchor(), std::logic_error);

  r.on_prefill(2, 20);
  EXPECT_EQ(r.state, RequestState::Decoding);
  EXPECT_EQ(r.num_computed, 5);
  EXPECT_EQ(r.anchor(), 20);
  EXPECT_EQ(r.num_tokens(), 6);
  EXPECT_EQ(r.token(5), 20);
  EXPECT_EQ(r.token(0), 10);
  EXPECT_THROW(r.token(6), std::logic_error);
  EXPECT_THROW(r.on_prefill(1, std::nullopt), std::logic_error);

  // Verify step: anchor 20 at position 5, two drafts accepted, bonus 23.
  const std::vector<int32_t> emitted{21, 22, 23};
  r.on_decode(emitted);
  EXPECT_EQ(r.num_computed, 8);  // positions 5, 6, 7: the old anchor and the two accepted drafts
  EXPECT_EQ(r.anchor(), 23);
  EXPECT_EQ(r.num_tokens(), r.num_computed + 1);
  EXPECT_EQ(r.output, (std::vector<int32_t>{20, 21, 22, 23}));
  EXPECT_THROW(r.on_decode({}), std::logic_error);
}

}  // namespace
}  // namespace flashdraft::engine
