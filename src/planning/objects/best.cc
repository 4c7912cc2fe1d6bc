// best (objects), ours: run every fast strategy and keep the cheapest plan
// (ties: the earlier in the list below); plan.strategy names the winner,
// e.g. "best(greedy_by_size)". greedy_best is not run on its own: it is the
// better of two candidates already in the list. A candidate is skipped above
// its record limit (min_cost_flow is the slowest: see kMinCostFlowMaxRecords),
// so best stays usable on large inputs.
#include <optional>
#include <string>

#include "planning/objects/objects_strategies.h"

namespace tensormem::planning {
namespace {

constexpr std::size_t kMinCostFlowMaxRecords = 200'000;

}  // namespace

Result<ObjectsPlan> BestObjects(std::span<const UsageRecord> records, const PlanParams& params) {
  using Fn = Result<ObjectsPlan> (*)(std::span<const UsageRecord>, const PlanParams&);
  struct Candidate {
    Fn fn;
    ObjectsStrategy strategy;
    std::size_t max_records;
  };
  constexpr std::size_t kAny = static_cast<std::size_t>(-1);
  const Candidate candidates[] = {
      {GreedyBySizeObjects, ObjectsStrategy::kGreedyBySize, kAny},
      {GreedyByBreadthObjects, ObjectsStrategy::kGreedyByBreadth, kAny},
      {MinCostFlowObjects, ObjectsStrategy::kMinCostFlow, kMinCostFlowMaxRecords},
      {GreedyInOrderObjects, ObjectsStrategy::kGreedyInOrder, kAny},
      {EqualityObjects, ObjectsStrategy::kEquality, kAny},
      {NaiveObjects, ObjectsStrategy::kNaive, kAny},
  };
  std::optional<ObjectsPlan> best;
  std::uint64_t best_total = 0;
  std::string winner;
  for (const Candidate& c : candidates) {
    if (records.size() > c.max_records) continue;
    TM_ASSIGN_OR_RETURN(ObjectsPlan plan, c.fn(records, params));
    const std::uint64_t total = TotalSize(plan);
    if (!best || total < best_total) {
      best = std::move(plan);
      best_total = total;
      winner = std::string(Name(c.strategy));
    }
  }
  best->strategy = "best(" + winner + ")";
  return std::move(*best);
}

}  // namespace tensormem::planning
