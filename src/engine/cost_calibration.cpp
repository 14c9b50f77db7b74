#include "engine/cost_calibration.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

namespace flashdraft::engine {
namespace {

using Clock = std::chrono::steady_clock;

// A calibration step counts as this many online steps: they are few, and
// made to tell the terms apart.
constexpr double kCalibrationWeight = 8.0;

struct Seq {
  bool decode = true;
  int64_t context = 0, rows = 1;
};
using Shape = std::vector<Seq>;

Shape repeat(Seq s, int64_t n) { return Shape(static_cast<size_t>(std::max<int64_t>(n, 1)), s); }

}  // namespace

CalibrationReport calibrate_step_costs(ModelRunner& runner, BlockManager& blocks, const CalibrationLimits& lim,
                                       StepCostModel& costs) {
  const auto start = Clock::now();
  const int64_t k = lim.max_drafts, spec = 1 + k, block = std::max(spec, lim.draft_block);
  const int64_t seqs = std::max<int64_t>(1, std::min(lim.max_seqs, lim.max_rows / std::max<int64_t>(spec, 1)));
  const int64_t plain_seqs = std::max<int64_t>(1, std::min(lim.max_seqs, lim.max_rows));
  // Short: about a HumanEval prompt and answer, or less where the pool is
  // sized for shorter requests (one prompt on the command line), so that the
  // single-request shapes fit; long: what is left of the context (if the
  // pool holds it).
  const int64_t room = blocks.free_blocks() * blocks.block_size();
  const int64_t short_ctx = std::clamp<int64_t>(std::min<int64_t>(256, lim.context_limit / 4), 1,
                                                std::max<int64_t>(room - block - blocks.block_size(), 1));
  const int64_t long_ctx = std::min<int64_t>(std::min<int64_t>(lim.context_limit - block - 1, 4096), room - block);

  std::vector<Shape> shapes;
  shapes.push_back({{true, short_ctx, 1}});
  if (k > 0) {
    shapes.push_back({{true, short_ctx, spec}});
    if (k >= 4) shapes.push_back({{true, short_ctx, 1 + k / 2}});
    shapes.push_back({{true, short_ctx, 2}});
  }
  shapes.push_back(repeat({true, short_ctx, 1}, plain_seqs));
  if (k > 0 && seqs > 1) {
    shapes.push_back(repeat({true, short_ctx, spec}, seqs));
    if (seqs >= 4) shapes.push_back(repeat({true, short_ctx, spec}, seqs / 2));
    shapes.push_back({{true, short_ctx, spec}, {true, short_ctx, 1}});
  }
  if (long_ctx > 2 * short_ctx) {
    shapes.push_back({{true, long_ctx, 1}});
    if (k > 0) shapes.push_back({{true, long_ctx, spec}});
  }
  shapes.push_back({{false, 0, std::min<int64_t>(64, lim.max_rows)}});
  if (plain_seqs > 2) shapes.push_back(repeat({true, short_ctx, 1}, plain_seqs / 2));
  if (k > 0 && seqs >= 2) shapes.push_back(repeat({true, short_ctx, 2}, seqs));

  // Dummy requests, ids -1, -2, ...: one per sequence of the widest shape.
  size_t widest = 0;
  for (const Shape& s : shapes) widest = std::max(widest, s.size());
  std::vector<std::unique_ptr<Request>> dummies;
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.seed = 0;
  greedy.max_tokens = 1;
  for (size_t i = 0; i < widest; ++i)
    dummies.push_back(std::make_unique<Request>(-1 - static_cast<RequestId>(i), std::vector<int32_t>{0}, greedy));

  CalibrationReport report;
  std::vector<int64_t> keep;
  for (const Shape& shape : shapes) {
    if (report.steps > 0 && std::chrono::duration<double>(Clock::now() - start).count() > lim.budget_seconds) break;
    StepPlan plan;
    StepShape measured;
    bool fits = true;
    for (size_t i = 0; i < shape.size() && fits; ++i) {
      const Seq& s = shape[i];
      Request& r = *dummies[i];
      r.prompt.assign(static_cast<size_t>(std::max<int64_t>(s.decode ? s.context : s.rows, 1)), 0);
      r.output.clear();
      if (s.decode) {
        r.output.push_back(0);
        r.state = RequestState::Decoding;
        r.num_computed = s.context;
      } else {
        r.state = RequestState::Prefilling;
        r.num_computed = 0;
      }
      // A drafting entry's drafter block covers its positions whatever its rows.
      fits = blocks.ensure(r.id, s.context + (s.decode && s.rows > 1 ? block : s.rows));
      using Kind = ScheduledRequest::Kind;
      plan.entries.push_back({&r, s.decode ? Kind::Decode : Kind::Prefill, s.context, s.rows, !s.decode});
      plan.total_rows += s.rows;
      if (s.decode) {
        measured.add_decode(s.context, s.rows, block);
        measured.uneven |= s.rows != shape[0].rows;
      } else {
        measured.add_prefill(s.context, s.rows);
      }
    }
    if (fits) {
      keep.clear();
      for (const Seq& s : shape) keep.push_back(s.decode ? (s.rows + 1) / 2 : s.rows);
      const int runs = runner.graphs_enabled() ? 3 : 2;
      double last = 0;
      for (int run = 0; run < runs; ++run) {
        const auto t0 = Clock::now();
        runner.run(plan, blocks);
        runner.write_context(plan, keep, blocks);
        const double t = std::chrono::duration<double>(Clock::now() - t0).count();
        if (run == runs - 1) last = t;
      }
      costs.observe(measured, last, kCalibrationWeight);
      ++report.steps;
    }
    for (size_t i = 0; i < shape.size(); ++i) {
      blocks.free(dummies[i]->id);
      runner.forget(dummies[i]->id);  // its rows set aside, never to be written
    }
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace flashdraft::engine
