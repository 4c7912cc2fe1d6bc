// SPDX-License-Identifier: Apache-2.0
// The heuristic offset strategies behind PlanOffsets (one file each). They
// may assume the problem passed CheckProblem and params.alignment >= 1;
// RunOffsetsStrategy fills the plan's metadata and validates the result.
// best and exact, which use the solver, sit above it (src/strategies).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "core/deadline.h"
#include "tensormem/planning.h"

namespace tensormem::planning {

using OffsetsFn = Result<OffsetsPlan> (*)(const Problem&, const PlanParams&);

// One offsets strategy with the dispatcher's argument checks, timing, lower
// bound and validation (PlanOffsets is this over its table); `name` labels
// the plan when the strategy did not, and the errors. The solver plans its
// first incumbent through it, below the dispatcher. reports_peak: the
// strategy's plan.lower_bound is already at least PeakLiveBytes(problem,
// params.alignment) (best's is: it computes the peak for its race), so the
// peak is not computed again.
Result<OffsetsPlan> RunOffsetsStrategy(const Problem& problem, std::string_view name,
                                       OffsetsFn strategy, const PlanParams& params,
                                       bool reports_peak = false);

Result<OffsetsPlan> NaiveOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> GreedyBySizeOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> GreedyByBreadthOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> ArenaOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> GreedyInOrderOffsets(const Problem& problem, const PlanParams& params);
Result<OffsetsPlan> FromObjectsOffsets(const Problem& problem, const PlanParams& params);
// best's candidates without its exact polish: the smallest arena of the fast
// strategies above; the plan's strategy is the winner's name, its
// lower_bound at least the peak live bytes at params.alignment.
Result<OffsetsPlan> BestHeuristicOffsets(const Problem& problem, const PlanParams& params);
// The same, saying whether the time limit cut it short (then the caller
// should not start more work: best's polish).
Result<OffsetsPlan> BestHeuristicOffsets(const Problem& problem, const PlanParams& params,
                                         bool* time_limit_hit);

// The buffer indices in ascending order of key(buffer), ties by index. The
// keys are read once into (key, index) pairs and those are sorted: at 10^6
// buffers a sort of indices through the buffers took most of a second.
template <typename KeyFn>
std::vector<std::size_t> OrderByKey(const Problem& problem, KeyFn key) {
  std::vector<std::pair<decltype(key(problem.buffers[0])), std::size_t>> keyed;
  keyed.reserve(problem.buffers.size());
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) keyed.emplace_back(key(problem.buffers[i]), i);
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::size_t> order(keyed.size());
  for (std::size_t i = 0; i < keyed.size(); ++i) order[i] = keyed[i].second;
  return order;
}

// Shared by the best-fit strategies: plain problems may use the literal
// reference loop when params.reference is set. `deadline` is the
// strategy's, made from params at its start (so ordering counts too).
Result<OffsetsPlan> PlaceInOrder(const Problem& problem, std::span<const std::size_t> order,
                                 const PlanParams& params, internal::Deadline* deadline);

}  // namespace tensormem::planning
