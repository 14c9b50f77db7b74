#pragma once
// A step cost model shaped like the CPU backend on the shipped pair (a step
// costs ~4 ms however small, each row ~0.5 ms more, attention and the
// drafter on top), given outright so that tests choose draft lengths
// without a clock. With it a lone request drafts a few tokens, eight at once
// draft only where drafts keep passing: the choices are mixed.
#include "engine/step_cost_model.h"

namespace flashdraft::engine::testing {

inline StepCostModel::Coefficients cpu_like_costs() {
  StepCostModel::Coefficients c{};
  c[0] = 4e-3;       // step
  c[1] = 0.35e-3;    // row
  c[5] = 0.1e-3;     // logit row
  c[8] = 0.2e-3;     // row x 1024 keys
  c[9] = 0.8e-3;     // drafter pass
  c[10] = 0.15e-3;   // drafter row
  c[11] = 0.1e-3;    // drafter row x 1024 keys
  return c;
}

// The same step with rows ~7x cheaper and drafter rows ~15x (a machine whose
// wide passes cost little more than narrow ones): eight requests at once
// draft where their drafts keep passing, each its own length (0 to 15).
inline StepCostModel::Coefficients cheap_row_costs() {
  StepCostModel::Coefficients c = cpu_like_costs();
  c[1] = 0.05e-3;   // row
  c[10] = 0.01e-3;  // drafter row
  return c;
}

}  // namespace flashdraft::engine::testing
