// SPDX-License-Identifier: Apache-2.0
// The offsets strategies built over the exact solver, in the layer above it
// (planning <- solver <- strategies): only the offsets dispatcher
// (offsets_dispatch.cc) names them.
#pragma once

#include "tensormem/planning.h"

namespace tensormem::planning {

// best: BestHeuristicOffsets, then, when the winner misses the lower bound on
// a small problem, the exact solver polishes it (PlanParams::polish_*).
Result<OffsetsPlan> BestOffsets(const Problem& problem, const PlanParams& params);
// exact: the solver minimising the arena within PlanParams::time_limit_seconds.
Result<OffsetsPlan> ExactOffsets(const Problem& problem, const PlanParams& params);

}  // namespace tensormem::planning
