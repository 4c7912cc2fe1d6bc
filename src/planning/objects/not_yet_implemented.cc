// TEMPORARY: strategies not written yet answer Unimplemented. Each one moves
// to its own file as it lands; this file must be gone before issue 2 closes.
#include "planning/objects/objects_strategies.h"

namespace tensormem::planning {
namespace {
Status NotYet(const char* name) {
  return Unimplemented(std::string("objects strategy ") + name + " is not implemented yet");
}
}  // namespace

Result<ObjectsPlan> EqualityObjects(std::span<const UsageRecord>, const PlanParams&) { return NotYet("equality"); }
Result<ExtentObjectsPlan> EqualityObjects(std::span<const ExtentRecord>, const PlanParams&) { return NotYet("equality"); }
Result<ObjectsPlan> GreedyInOrderObjects(std::span<const UsageRecord>, const PlanParams&) { return NotYet("greedy_in_order"); }
Result<ExtentObjectsPlan> GreedyInOrderObjects(std::span<const ExtentRecord>, const PlanParams&) { return NotYet("greedy_in_order"); }
Result<ObjectsPlan> GreedyByBreadthObjects(std::span<const UsageRecord>, const PlanParams&) { return NotYet("greedy_by_breadth"); }
Result<ObjectsPlan> GreedyBySizeObjects(std::span<const UsageRecord>, const PlanParams&) { return NotYet("greedy_by_size"); }
Result<ObjectsPlan> MinCostFlowObjects(std::span<const UsageRecord>, const PlanParams&) { return NotYet("min_cost_flow"); }
Result<ObjectsPlan> GreedyBestObjects(std::span<const UsageRecord>, const PlanParams&) { return NotYet("greedy_best"); }
Result<ObjectsPlan> BestObjects(std::span<const UsageRecord> r, const PlanParams& p) { return NaiveObjects(r, p); }

}  // namespace tensormem::planning

namespace tensormem {
ReallocationGraph BuildReallocationGraph(std::span<const std::vector<std::size_t>> dependencies) {
  return ReallocationGraph(dependencies.size());
}
}  // namespace tensormem
