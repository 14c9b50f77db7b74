// Runs many requests to completion through the scheduler and block manager
// with a fake model that reads its context back from a fake paged KV pool.
// The model's next token is a hash of every token it reads through the
// request's block table, so a wrong table, a block shared by two requests,
// a position missing after preemption, or a wrong chunk boundary changes the
// output; the outputs are compared with a plain one-request-at-a-time chain.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "engine/scheduler.h"
#include "model/kv_pool.h"

namespace flashdraft::engine {
namespace {

using Kind = ScheduledRequest::Kind;

constexpr int32_t kVocab = 97;
constexpr int32_t kEos = 0;

int32_t next_token(const std::vector<int32_t>& context) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : context) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
  return static_cast<int32_t>((h >> 17) % kVocab);
}

// What one request alone would produce.
std::vector<int32_t> reference_output(const std::vector<int32_t>& prompt, int max_tokens) {
  std::vector<int32_t> context = prompt, out;
  while (static_cast<int>(out.size()) < max_tokens) {
    const int32_t t = next_token(context);
    out.push_back(t);
    context.push_back(t);
    if (t == kEos) break;
  }
  return out;
}

uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full ^ c;
  h ^= h >> 29;
  return h * 0xBF58476D1CE4E5B9ull;
}

// One fake KV slot: who wrote it, in which residency (preemption count), at
// which position, and the token.
struct Slot {
  RequestId id = -1;
  int64_t residency = -1, pos = -1;
  int32_t token = -1;
};

class FakeRunner {
 public:
  FakeRunner(Scheduler& s, const BlockManager& bm) : s_(s), bm_(bm), pool_(bm.num_blocks() * bm.block_size()) {}

  // Executes a plan like the real runner: writes every row's KV first (one
  // batched forward), then reads each row's context back through the table.
  void run(const StepPlan& plan) {
    std::vector<std::vector<int32_t>> rows_tokens;
    for (const auto& e : plan.entries) {
      Request& r = *e.request;
      std::vector<int32_t> toks;
      if (e.kind == Kind::Prefill) {
        for (int64_t i = 0; i < e.rows; ++i) toks.push_back(r.token(e.pos0 + i));
      } else {
        toks.push_back(r.anchor());
        // Drafts: the true continuation, each wrong with probability ~0.35.
        std::vector<int32_t> ctx(r.prompt);
        ctx.insert(ctx.end(), r.output.begin(), r.output.end());
        for (int64_t i = 1; i < e.rows; ++i) {
          int32_t d = next_token(ctx);
          if (mix(static_cast<uint64_t>(r.id), static_cast<uint64_t>(e.pos0), static_cast<uint64_t>(i)) % 100 < 35) {
            d = (d + 1) % kVocab;
          }
          toks.push_back(d);
          ctx.push_back(d);
        }
      }
      for (size_t i = 0; i < toks.size(); ++i) {
        const int64_t pos = e.pos0 + static_cast<int64_t>(i);
        pool_[static_cast<size_t>(model::slot_of(bm_.table(r.id), bm_.block_size(), pos))] =
            Slot{r.id, r.preemptions, pos, toks[i]};
      }
      rows_tokens.push_back(std::move(toks));
    }
    for (size_t k = 0; k < plan.entries.size(); ++k) finish_entry(plan.entries[k], rows_tokens[k]);
  }

  int64_t drafted = 0, accepted = 0;

 private:
  // The fake target's prediction after position `pos`, from the pool.
  int32_t predict(const Request& r, int64_t pos) {
    std::vector<int32_t> ctx;
    for (int64_t q = 0; q <= pos; ++q) {
      const Slot& slot = pool_[static_cast<size_t>(model::slot_of(bm_.table(r.id), bm_.block_size(), q))];
      EXPECT_EQ(slot.id, r.id) << "position " << q << " read another request's KV";
      EXPECT_EQ(slot.residency, r.preemptions) << "request " << r.id << " position " << q << " is stale";
      EXPECT_EQ(slot.pos, q);
      ctx.push_back(slot.token);
    }
    return next_token(ctx);
  }

  // Emits tokens until EOS or max_tokens; returns how many of `tokens` were taken.
  size_t take_until_stop(const Request& r, const std::vector<int32_t>& tokens, bool& stopped) {
    size_t n = 0;
    stopped = false;
    while (n < tokens.size() && !stopped) {
      stopped = tokens[n] == kEos || static_cast<int>(r.output.size() + n + 1) >= r.params.max_tokens;
      ++n;
    }
    return n;
  }

  void finish_entry(const ScheduledRequest& e, const std::vector<int32_t>& toks) {
    Request& r = *e.request;
    bool stopped = false;
    if (e.kind == Kind::Prefill) {
      if (!e.last_chunk) {
        r.on_prefill(e.rows, std::nullopt);
        return;
      }
      const int32_t t = predict(r, e.pos0 + e.rows - 1);
      take_until_stop(r, {t}, stopped);
      r.on_prefill(e.rows, t);
    } else {
      // Greedy verification: draft i is kept while it equals the target's
      // prediction from the row before it; then the target's own token.
      std::vector<int32_t> emitted;
      int64_t a = 0;
      for (int64_t i = 1; i < e.rows; ++i) {
        const int32_t want = predict(r, e.pos0 + i - 1);
        if (toks[static_cast<size_t>(i)] != want) break;
        emitted.push_back(want);
        ++a;
      }
      emitted.push_back(predict(r, e.pos0 + a));
      r.spec.record(e.rows - 1, a);
      drafted += e.rows - 1;
      accepted += a;
      emitted.resize(take_until_stop(r, emitted, stopped));
      r.on_decode(emitted);
    }
    if (stopped) s_.finish(r, r.output.back() == kEos ? FinishReason::Stop : FinishReason::Length);
  }

  Scheduler& s_;
  const BlockManager& bm_;
  std::vector<Slot> pool_;
};

// Checks what must hold after every schedule().
void check_plan(const Scheduler& s, const BlockManager& bm, const StepPlan& plan) {
  const auto& cfg = s.config();
  ASSERT_LE(plan.total_rows, cfg.max_tokens_per_step);
  ASSERT_LE(static_cast<int64_t>(s.running().size()), cfg.max_running);
  int64_t rows = 0;
  bool prefill_seen = false;
  std::set<const Request*> planned;
  for (const auto& e : plan.entries) {
    const Request& r = *e.request;
    ASSERT_TRUE(planned.insert(&r).second) << "request " << r.id << " planned twice";
    ASSERT_NE(std::find(s.running().begin(), s.running().end(), &r), s.running().end());
    ASSERT_EQ(e.pos0, r.num_computed);
    ASSERT_GT(e.rows, 0);
    ASSERT_GE(bm.capacity(r.id), e.pos0 + e.rows) << "request " << r.id << " table too short";
    if (e.kind == Kind::Decode) {
      ASSERT_FALSE(prefill_seen);
      ASSERT_EQ(r.state, RequestState::Decoding);
      ASSERT_EQ(e.rows, cfg.spec_rows);
    } else {
      prefill_seen = true;
      ASSERT_EQ(r.state, RequestState::Prefilling);
      ASSERT_LE(e.rows, r.prefill_remaining());
      ASSERT_EQ(e.last_chunk, e.rows == r.prefill_remaining());
    }
    rows += e.rows;
  }
  ASSERT_EQ(rows, plan.total_rows);

  // Blocks: held only by running requests, never by two, none lost.
  std::set<int32_t> held;
  int64_t n = 0;
  for (const Request* r : s.running()) {
    for (int32_t b : bm.table(r->id)) held.insert(b), ++n;
  }
  for (const Request* r : s.waiting()) ASSERT_TRUE(bm.table(r->id).empty());
  ASSERT_EQ(static_cast<int64_t>(held.size()), n);
  ASSERT_EQ(n + bm.free_blocks(), bm.num_blocks());

  // FCFS: running in arrival order, all older than every waiting request, waiting in order.
  for (size_t i = 1; i < s.running().size(); ++i) ASSERT_LT(s.running()[i - 1]->arrival, s.running()[i]->arrival);
  for (size_t i = 1; i < s.waiting().size(); ++i) ASSERT_LT(s.waiting()[i - 1]->arrival, s.waiting()[i]->arrival);
  if (!s.running().empty() && !s.waiting().empty()) {
    ASSERT_LT(s.running().back()->arrival, s.waiting().front()->arrival);
  }
}

struct SimCase {
  const char* name;
  int64_t num_blocks, block_size;
  SchedulerConfig config;
  bool expect_preemption;
};

class SchedulerSimulation : public ::testing::TestWithParam<SimCase> {};

TEST_P(SchedulerSimulation, EveryRequestFinishesWithItsOwnOutput) {
  const SimCase& c = GetParam();
  BlockManager bm(c.num_blocks, c.block_size);
  Scheduler s(c.config, bm);
  FakeRunner runner(s, bm);

  std::vector<std::unique_ptr<Request>> reqs;
  for (int i = 0; i < 40; ++i) {
    const uint64_t h = mix(static_cast<uint64_t>(i), 3, 4);
    std::vector<int32_t> prompt(1 + h % 40);
    for (size_t j = 0; j < prompt.size(); ++j) prompt[j] = 1 + static_cast<int32_t>(mix(i, j, 9) % (kVocab - 1));
    SamplingParams p;
    p.temperature = 0;
    p.seed = 1;
    p.max_tokens = 1 + static_cast<int>((h >> 16) % 30);
    reqs.push_back(std::make_unique<Request>(i, std::move(prompt), p));
  }

  // Requests arrive a few per step while others run (continuous batching).
  size_t added = 0;
  int64_t steps = 0;
  while (added < reqs.size() || s.has_work()) {
    for (int k = 0; k < 3 && added < reqs.size(); ++k) s.add(*reqs[added++]);
    StepPlan plan = s.schedule();
    ASSERT_FALSE(plan.empty());
    check_plan(s, bm, plan);
    if (::testing::Test::HasFatalFailure()) return;
    for (Request* p : plan.preempted) ASSERT_EQ(p->state, RequestState::Waiting);
    runner.run(plan);
    ASSERT_LT(++steps, 20000) << "no progress: livelock";
  }

  for (const auto& r : reqs) {
    ASSERT_EQ(r->state, RequestState::Finished) << "request " << r->id;
    EXPECT_EQ(r->output, reference_output(r->prompt, r->params.max_tokens)) << "request " << r->id;
    EXPECT_EQ(r->finish_reason, r->output.back() == kEos ? FinishReason::Stop : FinishReason::Length);
  }
  EXPECT_EQ(bm.free_blocks(), bm.num_blocks());
  if (c.expect_preemption) {
    EXPECT_GT(s.preemptions(), 0);
  } else {
    EXPECT_EQ(s.preemptions(), 0);
  }
  if (c.config.spec_rows > 1) {
    // The drafts are right ~65% of the time: some, not all, are accepted.
    EXPECT_GT(runner.accepted, 0);
    EXPECT_LT(runner.accepted, runner.drafted);
  }
  RecordProperty("steps", static_cast<int>(steps));
  RecordProperty("preemptions", static_cast<int>(s.preemptions()));
}

// The largest request (40 prompt + 30 max_tokens) needs 68 + spec_rows positions.
INSTANTIATE_TEST_SUITE_P(
    Pools, SchedulerSimulation,
    ::testing::Values(
        SimCase{"roomy_plain", 400, 4, {.max_running = 8, .max_tokens_per_step = 64, .spec_rows = 1}, false},
        SimCase{"roomy_spec", 400, 4, {.max_running = 8, .max_tokens_per_step = 64, .spec_rows = 5}, false},
        SimCase{"tiny_plain", 18, 4, {.max_running = 6, .max_tokens_per_step = 16, .spec_rows = 1}, true},
        SimCase{"tiny_spec", 19, 4, {.max_running = 6, .max_tokens_per_step = 16, .spec_rows = 4}, true},
        SimCase{"tiny_blocks_of_one", 75, 1, {.max_running = 8, .max_tokens_per_step = 7, .spec_rows = 7}, true},
        SimCase{"one_at_a_time", 30, 16, {.max_running = 1, .max_tokens_per_step = 5, .spec_rows = 3}, false}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace flashdraft::engine
