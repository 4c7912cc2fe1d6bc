// TEMPORARY until the exact solver lands (issue 5): `exact` answers with the
// best heuristic plan and says so in the strategy name.
#include "planning/offsets/offsets_strategies.h"

namespace tensormem::planning {

Result<OffsetsPlan> ExactOffsets(const Problem& problem, const PlanParams& params) {
  return Unimplemented("the exact solver is not implemented yet");
  (void)problem;
  (void)params;
}

}  // namespace tensormem::planning
