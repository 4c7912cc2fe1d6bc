// The offset strategies behind PlanOffsets (one file each). They may assume
// the problem passed CheckProblem and params.alignment >= 1; the dispatcher
// fills the plan's metadata and validates the result.
#pragma once

#include "core/deadline.h"
#include "tensormem/planning.h"

namespace tensormem::planning {

Result<OffsetsPlan> NaiveOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> GreedyBySizeOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> GreedyByBreadthOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> ArenaOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> FromObjectsOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> BestOffsets(const Problem& problem, const PlanParams& params);
// Implemented by the exact solver (src/solver).
Result<OffsetsPlan> ExactOffsets(const Problem& problem, const PlanParams& params);

// Shared by the best-fit strategies: plain problems may use the literal
// reference loop when params.reference is set. `deadline` is the
// strategy's, made from params at its start (so ordering counts too).
Result<OffsetsPlan> PlaceInOrder(const Problem& problem, std::span<const std::size_t> order,
                                 const PlanParams& params, internal::Deadline* deadline);

}  // namespace tensormem::planning
