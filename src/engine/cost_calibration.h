#pragma once
// Seeds a StepCostModel at engine start: a few dummy steps of chosen shapes
// (plain decode, verify of 1 + k rows, several requests, long context, a
// prefill chunk) run through the engine's own ModelRunner on its own KV pool,
// each timed. The dummy requests hold blocks of the pool only while they run
// (ids below zero, which no real request has), and what they write is garbage
// nobody reads. Every shape runs twice, three times where graphs are
// recorded, and only the last run counts (the first may grow buffers, the
// first two on a graph backend run eagerly and record).
//
// The shapes come in order of how much the policy leans on them and stop
// when the time budget is spent, so a slow machine or model gets fewer, never
// a slow start; the online fit (StepCostModel::observe on every real step)
// fills in the rest.
#include <cstdint>

#include "engine/block_manager.h"
#include "engine/model_runner.h"
#include "engine/step_cost_model.h"

namespace flashdraft::engine {

struct CalibrationLimits {
  int64_t max_drafts = 0;      // the engine's num_speculative_tokens
  int64_t draft_block = 0;     // rows of the drafter's block (Engine::reach_); 0: 1 + max_drafts
  int64_t max_seqs = 1;        // max_running
  int64_t max_rows = 512;      // max_tokens_per_step
  int64_t context_limit = 0;   // the engine's context limit (positions)
  double budget_seconds = 0.25;
};

struct CalibrationReport {
  int64_t steps = 0;  // timed steps fed to the model
  double seconds = 0;
};

CalibrationReport calibrate_step_costs(ModelRunner& runner, BlockManager& blocks, const CalibrationLimits& limits,
                                       StepCostModel& costs);

}  // namespace flashdraft::engine
