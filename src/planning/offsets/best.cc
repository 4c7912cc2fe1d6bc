// best (offsets), its heuristic part: run every fast offset strategy and
// keep the smallest arena (ties: the earlier in the list). Planning cost is
// the sum of theirs, all near-linear on real networks. from_objects
// (greedy_best objects laid back to back) joins only up to 2,000 buffers:
// it never won on the MiniMalloc instances, the 20 ONNX models or the
// allocation traces, and above that size its objects pass costs more than
// the three best-fit orders together.
// A candidate that gives up on its work budget (ResourceExhausted) is
// skipped, never the whole plan. The exact polish of the winner is above the
// solver (src/strategies/best.cc); the solver starts from this plan.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "planning/offsets/offsets_strategies.h"

namespace tensormem::planning {

Result<OffsetsPlan> BestHeuristicOffsets(const Problem& problem, const PlanParams& params) {
  using Fn = Result<OffsetsPlan> (*)(const Problem&, const PlanParams&);
  struct Candidate {
    Fn fn;
    std::string_view name;  // the offsets dispatcher's, which sits above
  };
  const Candidate candidates[] = {
      {GreedyBySizeOffsets, "greedy_by_size"},
      {GreedyByBreadthOffsets, "greedy_by_breadth"},
      {ArenaOffsets, "arena"},
  };
  std::optional<OffsetsPlan> best;
  std::string winner;
  for (const Candidate& c : candidates) {
    Result<OffsetsPlan> plan = c.fn(problem, params);
    if (!plan.ok()) return plan.status();
    if (!best || plan->total < best->total) {
      best = std::move(*plan);
      winner = std::string(c.name);
    }
  }
  // from_objects cannot take fixed offsets; elsewhere it is a fair candidate.
  bool has_fixed = false;
  for (const Buffer& b : problem.buffers) has_fixed |= b.fixed_offset.has_value();
  if (!has_fixed && problem.buffers.size() <= 2'000) {
    PlanParams p = params;
    p.from_objects = ObjectsStrategy::kGreedyBest;
    Result<OffsetsPlan> plan = FromObjectsOffsets(problem, p);
    if (!plan.ok() && plan.status().code() != StatusCode::kResourceExhausted) return plan.status();
    if (plan.ok() && plan->total < best->total) {
      best = std::move(*plan);
      winner = "from_objects";
    }
  }
  best->strategy = winner;
  return std::move(*best);
}

}  // namespace tensormem::planning
