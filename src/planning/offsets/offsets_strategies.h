// The offset strategies behind PlanOffsets (one file each). They may assume
// the problem passed CheckProblem and params.alignment >= 1; the dispatcher
// fills the plan's metadata and validates the result.
#pragma once

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
// reference loop when params.reference is set.
Result<OffsetsPlan> PlaceInOrder(const Problem& problem, std::span<const std::size_t> order,
                                 const PlanParams& params);

}  // namespace tensormem::planning
