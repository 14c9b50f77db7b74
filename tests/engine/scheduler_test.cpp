#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "core/error.h"

namespace flashdraft::engine {
namespace {

using Kind = ScheduledRequest::Kind;

SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.seed = 7;
  return p;
}

std::unique_ptr<Request> make_request(RequestId id, int64_t prompt_len, int max_tokens) {
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
  std::iota(prompt.begin(), prompt.end(), static_cast<int32_t>(id * 1000 + 1));
  return std::make_unique<Request>(id, std::move(prompt), greedy(max_tokens));
}

std::vector<RequestId> ids(const std::deque<Request*>& q) {
  std::vector<RequestId> out;
  for (const Request* r : q) out.push_back(r->id);
  return out;
}
std::vector<RequestId> ids(const std::vector<Request*>& q) { return ids(std::deque<Request*>(q.begin(), q.end())); }

// Plays the runner for one plan without a model: every prefill's last chunk
// and every decode emits `token` (a decode accepts no draft).
void run_trivially(const StepPlan& plan, int32_t token = 5) {
  for (const auto& e : plan.entries) {
    if (e.kind == Kind::Prefill) {
      e.request->on_prefill(e.rows, e.last_chunk ? std::optional<int32_t>(token) : std::nullopt);
    } else {
      const int32_t t[] = {token};
      e.request->on_decode(t);
    }
  }
}

TEST(Scheduler, RejectsBadConfig) {
  BlockManager bm(8, 4);
  EXPECT_THROW(Scheduler({.max_running = 0, .max_tokens_per_step = 16, .spec_rows = 1}, bm), Error);
  EXPECT_THROW(Scheduler({.max_running = 2, .max_tokens_per_step = 16, .spec_rows = 0}, bm), Error);
  EXPECT_THROW(Scheduler({.max_running = 2, .max_tokens_per_step = 3, .spec_rows = 4}, bm), Error);
}

TEST(Scheduler, LongPromptIsChunkedToTheRowBudget) {
  BlockManager bm(100, 16);
  Scheduler s({.max_running = 4, .max_tokens_per_step = 256, .spec_rows = 1}, bm);
  auto r = make_request(1, 1000, 10);
  s.add(*r);
  const int64_t expect_rows[] = {256, 256, 256, 232};
  for (int step = 0; step < 4; ++step) {
    StepPlan plan = s.schedule();
    ASSERT_EQ(plan.entries.size(), 1u) << "step " << step;
    const auto& e = plan.entries[0];
    EXPECT_EQ(e.kind, Kind::Prefill);
    EXPECT_EQ(e.pos0, 256 * step);
    EXPECT_EQ(e.rows, expect_rows[step]);
    EXPECT_EQ(e.last_chunk, step == 3);
    EXPECT_EQ(plan.total_rows, expect_rows[step]);
    EXPECT_GE(bm.capacity(1), e.pos0 + e.rows);
    run_trivially(plan);
  }
  EXPECT_EQ(r->state, RequestState::Decoding);
  StepPlan plan = s.schedule();
  ASSERT_EQ(plan.entries.size(), 1u);
  EXPECT_EQ(plan.entries[0].kind, Kind::Decode);
  EXPECT_EQ(plan.entries[0].pos0, 1000);
  EXPECT_EQ(plan.entries[0].rows, 1);
}

TEST(Scheduler, DecodeStepsGetSpecRowsAndBlocksForThem) {
  BlockManager bm(64, 4);
  Scheduler s({.max_running = 4, .max_tokens_per_step = 64, .spec_rows = 16}, bm);
  auto a = make_request(1, 7, 40);
  auto b = make_request(2, 3, 40);
  s.add(*a);
  s.add(*b);
  run_trivially(s.schedule());
  for (int step = 0; step < 3; ++step) {
    StepPlan plan = s.schedule();
    ASSERT_EQ(plan.entries.size(), 2u);
    for (const auto& e : plan.entries) {
      EXPECT_EQ(e.kind, Kind::Decode);
      EXPECT_EQ(e.rows, 16);
      EXPECT_EQ(e.pos0, e.request->num_computed);
      EXPECT_EQ(e.pos0, e.request->num_tokens() - 1);  // the anchor's position
      EXPECT_GE(bm.capacity(e.request->id), e.pos0 + 16);
      EXPECT_LT(bm.capacity(e.request->id), e.pos0 + 16 + 4);  // no more than needed
    }
    EXPECT_EQ(plan.total_rows, 32);
    run_trivially(plan);
  }
}

// Fewer drafts than the drafter's block: a step verifies spec_rows rows but
// the drafter writes its whole block (reach_rows positions), so that much is
// reserved, and a request too long for its last step's reach is refused.
TEST(Scheduler, DecodeStepsReserveTheirReach) {
  BlockManager bm(64, 4);
  Scheduler s({.max_running = 4, .max_tokens_per_step = 64, .spec_rows = 4, .reach_rows = 16}, bm);
  EXPECT_EQ(s.reach(), 16);
  auto a = make_request(1, 7, 40);
  s.add(*a);
  run_trivially(s.schedule());
  for (int step = 0; step < 3; ++step) {
    StepPlan plan = s.schedule();
    ASSERT_EQ(plan.entries.size(), 1u);
    const auto& e = plan.entries[0];
    EXPECT_EQ(e.rows, 4);
    EXPECT_GE(bm.capacity(e.request->id), e.pos0 + 16);
    EXPECT_LT(bm.capacity(e.request->id), e.pos0 + 16 + 4);
    run_trivially(plan);
  }
  EXPECT_EQ(s.max_positions(*a), 7 + 40 - 2 + 16);
  EXPECT_THROW(Scheduler({.max_running = 1, .max_tokens_per_step = 64, .spec_rows = 4, .reach_rows = 3}, bm), Error);
}

TEST(Scheduler, DecodesComeFirstAndTheRowBudgetIsNeverExceeded) {
  // 22 rows: five decodes leave 2 for prefills, which finally bring a sixth
  // request to decoding, and six decodes would need 24.
  constexpr int64_t kBudget = 22;
  BlockManager bm(200, 8);
  Scheduler s({.max_running = 8, .max_tokens_per_step = kBudget, .spec_rows = 4}, bm);
  std::vector<std::unique_ptr<Request>> reqs;
  for (int i = 0; i < 6; ++i) {
    reqs.push_back(make_request(i, 9 + 5 * i, 30));
    s.add(*reqs.back());
  }
  int64_t most_decodes = 0;
  for (int step = 0; step < 40 && s.has_work(); ++step) {
    StepPlan plan = s.schedule();
    int64_t rows = 0;
    bool seen_prefill = false;
    for (const auto& e : plan.entries) {
      rows += e.rows;
      if (e.kind == Kind::Prefill) seen_prefill = true;
      EXPECT_FALSE(e.kind == Kind::Decode && seen_prefill) << "decode planned after a prefill";
    }
    EXPECT_EQ(rows, plan.total_rows);
    EXPECT_LE(rows, kBudget);
    // The budget is used up whenever unplanned work could have used it.
    bool waiting_prefill = false;
    for (const Request* r : s.running()) waiting_prefill |= r->state == RequestState::Prefilling;
    if (waiting_prefill || !s.waiting().empty()) {
      const bool leftover_unusable = kBudget - rows < 1;
      bool all_prefills_planned = true;
      for (const Request* r : s.running()) {
        if (r->state != RequestState::Prefilling) continue;
        bool planned = false;
        for (const auto& e : plan.entries) planned |= e.request == r;
        all_prefills_planned &= planned;
      }
      EXPECT_TRUE(leftover_unusable || (all_prefills_planned && s.waiting().empty()))
          << "step " << step << " left " << kBudget - rows << " rows unused";
    }
    int64_t decodes = 0;
    for (const auto& e : plan.entries) decodes += e.kind == Kind::Decode;
    most_decodes = std::max(most_decodes, decodes);
    run_trivially(plan);
  }
  EXPECT_EQ(most_decodes, 5);  // budget-bound: the sixth decoding request waits its turn
}

TEST(Scheduler, MaxRunningIsRespected) {
  BlockManager bm(100, 4);
  Scheduler s({.max_running = 3, .max_tokens_per_step = 1000, .spec_rows = 2}, bm);
  std::vector<std::unique_ptr<Request>> reqs;
  for (int i = 0; i < 7; ++i) {
    reqs.push_back(make_request(i, 5, 3));
    s.add(*reqs.back());
  }
  StepPlan plan = s.schedule();
  EXPECT_EQ(plan.entries.size(), 3u);
  EXPECT_EQ(s.running().size(), 3u);
  EXPECT_EQ(ids(s.waiting()), (std::vector<RequestId>{3, 4, 5, 6}));
  run_trivially(plan);
  plan = s.schedule();
  EXPECT_EQ(plan.entries.size(), 3u);  // the three decode, nobody else gets in
  EXPECT_EQ(s.running().size(), 3u);
  run_trivially(plan);
  s.finish(*reqs[1], FinishReason::Stop);
  EXPECT_EQ(reqs[1]->state, RequestState::Finished);
  EXPECT_EQ(reqs[1]->finish_reason, FinishReason::Stop);
  EXPECT_TRUE(bm.table(1).empty());
  plan = s.schedule();
  EXPECT_EQ(ids(s.running()), (std::vector<RequestId>{0, 2, 3}));
}

TEST(Scheduler, AdmissionIsFirstComeFirstServedWithoutSkipping) {
  BlockManager bm(10, 4);
  Scheduler s({.max_running = 8, .max_tokens_per_step = 100, .spec_rows = 1}, bm);
  auto a = make_request(1, 24, 2);  // 6 blocks
  auto b = make_request(2, 20, 2);  // 5 blocks: does not fit next to a
  auto c = make_request(3, 4, 2);   // 1 block: would fit, but arrived after b
  s.add(*a);
  s.add(*b);
  s.add(*c);
  StepPlan plan = s.schedule();
  EXPECT_EQ(ids(s.running()), (std::vector<RequestId>{1}));
  EXPECT_EQ(ids(s.waiting()), (std::vector<RequestId>{2, 3}));
  EXPECT_TRUE(plan.preempted.empty());
  run_trivially(plan);
  s.finish(*a, FinishReason::Length);
  plan = s.schedule();
  EXPECT_EQ(ids(s.running()), (std::vector<RequestId>{2, 3}));
  ASSERT_EQ(plan.entries.size(), 2u);
  EXPECT_EQ(plan.entries[0].request->id, 2);
  EXPECT_EQ(plan.entries[1].request->id, 3);
  EXPECT_LT(b->arrival, c->arrival);
}

TEST(Scheduler, PreemptsTheMostRecentlyAdmittedAndRequeuesItAtTheFront) {
  BlockManager bm(4, 4);
  Scheduler s({.max_running = 3, .max_tokens_per_step = 64, .spec_rows = 1}, bm);
  auto a = make_request(1, 4, 10), b = make_request(2, 4, 10), c = make_request(3, 4, 10), d = make_request(4, 4, 10);
  for (Request* r : {a.get(), b.get(), c.get(), d.get()}) s.add(*r);
  StepPlan plan = s.schedule();  // a, b, c prefill one block each; d waits (max_running)
  EXPECT_EQ(ids(s.running()), (std::vector<RequestId>{1, 2, 3}));
  run_trivially(plan, 9);

  // a takes the last free block for position 4; b then needs one too: c goes.
  plan = s.schedule();
  ASSERT_EQ(plan.preempted.size(), 1u);
  EXPECT_EQ(plan.preempted[0], c.get());
  EXPECT_EQ(ids(s.running()), (std::vector<RequestId>{1, 2}));
  EXPECT_EQ(ids(s.waiting()), (std::vector<RequestId>{3, 4}));  // ahead of the newer d
  EXPECT_EQ(c->state, RequestState::Waiting);
  EXPECT_EQ(c->num_computed, 0);
  EXPECT_EQ(c->output, (std::vector<int32_t>{9}));  // kept: it will be recomputed, not taken back
  EXPECT_EQ(c->prefill_remaining(), 5);
  EXPECT_EQ(c->preemptions, 1);
  EXPECT_TRUE(bm.table(3).empty());
  EXPECT_EQ(s.preemptions(), 1);
  ASSERT_EQ(plan.entries.size(), 2u);  // c is not re-admitted by preempting someone
  EXPECT_EQ(plan.entries[0].request, a.get());
  EXPECT_EQ(plan.entries[1].request, b.get());
  EXPECT_EQ(bm.free_blocks(), 0);
  run_trivially(plan);

  // Once a finishes, c (not the newer d) comes back and prefills prompt + output.
  s.finish(*a, FinishReason::Stop);
  plan = s.schedule();
  EXPECT_EQ(ids(s.running()), (std::vector<RequestId>{2, 3}));
  ASSERT_EQ(plan.entries.size(), 2u);
  EXPECT_EQ(plan.entries[1].request, c.get());
  EXPECT_EQ(plan.entries[1].kind, Kind::Prefill);
  EXPECT_EQ(plan.entries[1].rows, 5);
  EXPECT_TRUE(plan.entries[1].last_chunk);
}

TEST(Scheduler, SeveralPreemptionsInOneStepGoYoungestFirstAndKeepArrivalOrder) {
  BlockManager bm(4, 4);
  Scheduler s({.max_running = 4, .max_tokens_per_step = 64, .spec_rows = 5}, bm);
  std::vector<std::unique_ptr<Request>> r;
  for (int i = 0; i < 4; ++i) {
    r.push_back(make_request(i, 4, 8));
    s.add(*r.back());
  }
  run_trivially(s.schedule());  // four prefills of one block each: the pool is full

  // r0 needs positions 4..8: two more blocks. r3 then r2 are preempted; r1
  // cannot grow either and, now the youngest, yields its own block.
  StepPlan plan = s.schedule();
  EXPECT_EQ(plan.preempted, (std::vector<Request*>{r[3].get(), r[2].get(), r[1].get()}));
  EXPECT_EQ(ids(s.waiting()), (std::vector<RequestId>{1, 2, 3}));
  EXPECT_EQ(ids(s.running()), (std::vector<RequestId>{0}));
  ASSERT_EQ(plan.entries.size(), 1u);
  EXPECT_EQ(plan.entries[0].request, r[0].get());
  EXPECT_EQ(bm.table(0).size(), 3u);
  EXPECT_EQ(s.preemptions(), 3);
  run_trivially(plan);

  // r1 needs 2 blocks to prefill its 5 tokens, 1 is free: it waits; the
  // running request is not preempted to admit it.
  plan = s.schedule();
  EXPECT_TRUE(plan.preempted.empty());
  EXPECT_EQ(ids(s.running()), (std::vector<RequestId>{0}));
}

TEST(Scheduler, RequestThatCanNeverFitIsRejectedClearly) {
  BlockManager bm(4, 4);  // 16 positions in all
  Scheduler s({.max_running = 4, .max_tokens_per_step = 64, .spec_rows = 4}, bm);
  auto too_big = make_request(11, 10, 5);  // last decode step: anchor at 13, rows 13..16 -> 17 positions
  try {
    s.add(*too_big);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("request 11"), std::string::npos) << msg;
    EXPECT_NE(msg.find("KV"), std::string::npos) << msg;
  }
  EXPECT_FALSE(s.has_work());
  auto just_fits = make_request(12, 10, 4);  // 16 positions
  EXPECT_NO_THROW(s.add(*just_fits));
  auto empty = make_request(13, 0, 4);
  EXPECT_THROW(s.add(*empty), Error);
}

TEST(Scheduler, FinishFreesBlocksAndAbortsWaitingRequests) {
  BlockManager bm(8, 4);
  Scheduler s({.max_running = 1, .max_tokens_per_step = 64, .spec_rows = 1}, bm);
  auto a = make_request(1, 6, 4), b = make_request(2, 6, 4);
  s.add(*a);
  s.add(*b);
  run_trivially(s.schedule());
  EXPECT_EQ(bm.free_blocks(), 6);
  s.finish(*b, FinishReason::Abort);  // still waiting
  EXPECT_EQ(b->state, RequestState::Finished);
  EXPECT_TRUE(s.waiting().empty());
  s.finish(*a, FinishReason::Length);
  EXPECT_EQ(bm.free_blocks(), 8);
  EXPECT_FALSE(s.has_work());
  EXPECT_TRUE(s.schedule().empty());
  EXPECT_THROW(s.finish(*a, FinishReason::Stop), std::logic_error);
}

}  // namespace
}  // namespace flashdraft::engine
