// SPDX-License-Identifier: Apache-2.0
// exact (offsets): the exact solver (tensormem/solver.h) minimising the
// arena within PlanParams::time_limit_seconds, started from the best
// heuristic. Always a valid plan; its lower bound is the solver's proven one.
#include "strategies/strategies.h"
#include "tensormem/solver.h"

namespace tensormem::planning {

Result<OffsetsPlan> ExactOffsets(const Problem& problem, const PlanParams& params) {
  SolverParams sp;
  sp.goal = SolveGoal::kMinimize;
  sp.alignment = params.alignment;
  sp.time_limit_seconds = params.time_limit_seconds;
  sp.should_stop = params.should_stop;
  Problem unbounded = problem;  // the strategy plans; capacity checks are the caller's
  unbounded.capacity.reset();
  TM_ASSIGN_OR_RETURN(SolveResult r, SolveOffsets(unbounded, sp));
  if (!r.has_plan) {
    if (r.status == SolveStatus::kUnknown) return DeadlineExceeded(r.reason);
    return Internal("the exact solver returned no plan");
  }
  OffsetsPlan plan = std::move(r.plan);
  plan.strategy = r.status == SolveStatus::kOptimal ? "exact(optimal)" : "exact(gap " + std::to_string(r.gap) + ")";
  plan.lower_bound = r.lower_bound;
  return plan;
}

}  // namespace tensormem::planning
