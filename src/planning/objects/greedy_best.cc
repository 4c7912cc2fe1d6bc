// SPDX-License-Identifier: Apache-2.0
// greedy_best (objects), TFLite GPU's BestGreedy: run greedy_by_size and
// greedy_by_breadth and keep greedy_by_breadth only if its total is strictly
// smaller. Both paths (default and reference) run the chosen path of each.
#include "planning/objects/objects_strategies.h"

namespace tensormem::planning {

Result<ObjectsPlan> GreedyBestObjects(std::span<const UsageRecord> records,
                                      const PlanParams& params) {
  TM_ASSIGN_OR_RETURN(ObjectsPlan by_size, GreedyBySizeObjects(records, params));
  TM_ASSIGN_OR_RETURN(ObjectsPlan by_breadth, GreedyByBreadthObjects(records, params));
  if (TotalSize(by_breadth) < TotalSize(by_size)) {
    by_breadth.strategy = "greedy_best(greedy_by_breadth)";
    return by_breadth;
  }
  by_size.strategy = "greedy_best(greedy_by_size)";
  return by_size;
}

}  // namespace tensormem::planning
