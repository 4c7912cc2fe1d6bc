// best (offsets): run every fast offset strategy and keep the smallest arena
// (ties: the earlier in the list). Planning cost is the sum of theirs, all
// near-linear on real networks. from_objects (greedy_best objects laid back
// to back) joins only up to 2,000 buffers: it never won on the MiniMalloc
// instances, the 20 ONNX models or the allocation traces, and above that
// size its objects pass costs more than the three best-fit orders together.
// A candidate that gives up on its work budget (ResourceExhausted) is
// skipped, never the whole plan. The time limit covers every candidate:
// once it passes, the cheapest plan of those that finished is returned
// (kDeadlineExceeded when none did). When the winner misses the lower bound on a
// small problem, the exact solver polishes it within a node budget
// (PlanParams::polish_*): greedy orders cannot make a tensor alternate above
// and below its neighbours (convnext_tiny's residuals), a search can.
#include <algorithm>
#include <optional>
#include <string>

#include "core/deadline.h"
#include "planning/offsets/offsets_strategies.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/solver.h"

namespace tensormem::planning {

Result<OffsetsPlan> BestOffsets(const Problem& problem, const PlanParams& params) {
  using Fn = Result<OffsetsPlan> (*)(const Problem&, const PlanParams&);
  struct Candidate {
    Fn fn;
    OffsetsStrategy strategy;
  };
  const Candidate candidates[] = {
      {GreedyBySizeOffsets, OffsetsStrategy::kGreedyBySize},
      {GreedyByBreadthOffsets, OffsetsStrategy::kGreedyByBreadth},
      {ArenaOffsets, OffsetsStrategy::kArena},
  };
  // One deadline for all candidates: each gets what is left of it.
  internal::Deadline deadline(params.time_limit_seconds, params.should_stop);
  PlanParams p = params;
  std::optional<OffsetsPlan> best;
  std::string winner;
  Status stopped;  // why a candidate did not finish in time
  for (const Candidate& c : candidates) {
    if (deadline.Expired()) {
      stopped = DeadlineExceeded(deadline.Why() + " was reached before " +
                                 std::string(Name(c.strategy)) + " ran");
      break;
    }
    p.time_limit_seconds = deadline.ForNested();
    Result<OffsetsPlan> plan = c.fn(problem, p);
    if (!plan.ok() && plan.status().code() == StatusCode::kDeadlineExceeded) {
      stopped = plan.status().WithContext(std::string(Name(c.strategy)));
      break;
    }
    if (!plan.ok()) return plan.status();
    if (!best || plan->total < best->total) {
      best = std::move(*plan);
      winner = std::string(Name(c.strategy));
    }
  }
  if (!best) return DeadlineExceeded("no candidate finished: " + stopped.message());
  // from_objects cannot take fixed offsets; elsewhere it is a fair candidate.
  bool has_fixed = false;
  for (const Buffer& b : problem.buffers) has_fixed |= b.fixed_offset.has_value();
  if (!has_fixed && problem.buffers.size() <= 2'000 && stopped.ok() && !deadline.Expired()) {
    p.from_objects = ObjectsStrategy::kGreedyBest;
    p.time_limit_seconds = deadline.ForNested();
    Result<OffsetsPlan> plan = FromObjectsOffsets(problem, p);
    if (!plan.ok() && plan.status().code() != StatusCode::kResourceExhausted &&
        plan.status().code() != StatusCode::kDeadlineExceeded)
      return plan.status();
    if (plan.ok() && plan->total < best->total) {
      best = std::move(*plan);
      winner = "from_objects";
    }
  }
  if (params.polish_nodes > 0 && problem.buffers.size() <= params.polish_max_buffers &&
      stopped.ok() && !deadline.Expired() &&
      best->total > PeakLiveBytes(problem, params.alignment)) {
    SolverParams sp;
    sp.goal = SolveGoal::kMinimize;
    sp.alignment = params.alignment;
    sp.node_limit = params.polish_nodes;
    // Half the budget for the first probes: smaller ones spread a tight
    // budget over many heights and restarts (shufflenet_v2 then stays 16
    // bytes above its bound); the whole budget in one probe tries too few
    // heights on the MiniMalloc instances (C, D, G, K 3-8 % worse).
    sp.probe_node_budget = std::max<std::uint64_t>(params.polish_nodes / 2, 1);
    sp.time_limit_seconds = std::min(params.polish_seconds, deadline.ForNested());
    sp.should_stop = params.should_stop;
    sp.heuristic_incumbent = false;  // start from this plan; no recursion into best
    sp.initial_plan = &*best;
    Problem unbounded = problem;
    unbounded.capacity.reset();
    Result<SolveResult> r = SolveOffsets(unbounded, sp);
    if (!r.ok()) return r.status();
    if (r->has_plan && r->plan.total < best->total) {
      best->offsets = std::move(r->plan.offsets);
      best->total = r->plan.total;
      winner += "+exact";
    }
    best->lower_bound = std::max(best->lower_bound, r->lower_bound);
  }
  if (!stopped.ok()) winner += ", time limit hit";
  best->strategy = "best(" + winner + ")";
  return std::move(*best);
}

}  // namespace tensormem::planning
