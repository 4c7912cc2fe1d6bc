// SPDX-License-Identifier: Apache-2.0
// greedy_by_breadth (offsets): visit tasks from the widest (largest sum of
// live sizes) down, and within a task its tensors largest first; place each
// tensor not yet placed at the best-fitting gap (best_fit.h). The peak task
// is packed first, so the arena tends to end where the peak needs it.
#include <optional>

#include "planning/breadth_order.h"
#include "planning/offsets/best_fit.h"
#include "planning/offsets/offsets_strategies.h"

namespace tensormem::planning {

Result<OffsetsPlan> GreedyByBreadthOffsets(const Problem& problem, const PlanParams& params) {
  internal::Deadline deadline(params.time_limit_seconds, params.should_stop);
  const std::vector<UsageRecord> records = ToRecords(problem);
  if (params.reference)
    return PlaceInOrder(problem, BreadthOrderReference(records), params, &deadline);
  const std::optional<std::vector<std::size_t>> order = BreadthOrder(records, &deadline);
  if (!order) return PlacementDeadline(deadline, 0, records.size());
  return PlaceInOrder(problem, *order, params, &deadline);
}

}  // namespace tensormem::planning
