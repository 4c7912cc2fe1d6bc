// SPDX-License-Identifier: Apache-2.0
// The exact solver on arbitrary problems (the problem CSV reader's input,
// at most 40 buffers, a node budget): an answer, or an error for bad input
// only, never a crash or a hang. Every plan validates and lies within its
// claims (height, bound, capacity); "infeasible" is never the answer where
// the greedy planner fits the capacity, and "optimal" never above the greedy
// plan. Both goals: minimise, and fit in a capacity taken from the bytes.
// An infeasible subset (half the fits ask for one) does not fit alone and,
// when called irreducible, fits without any one of its buffers. One to
// three searches race (SolverParams::threads), by the input's length.
// Seeds: fuzz/corpus/csv.
#include <cstdint>
#include <sstream>
#include <string>

#include "reader_fuzz_common.h"
#include "tensormem/solver.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tensormem;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  ReadLimits limits;
  limits.max_buffers = 40;
  Result<Problem> problem = ReadProblemCsv(in, "fuzz.csv", limits);
  if (!problem.ok()) return 0;
  const std::uint64_t alignment = std::uint64_t{1} << (size % 5);
  PlanParams greedy_params;
  greedy_params.alignment = alignment;
  Result<OffsetsPlan> greedy = PlanOffsets(*problem, OffsetsStrategy::kGreedyBySize, greedy_params);
  for (const SolveGoal goal : {SolveGoal::kMinimize, SolveGoal::kFit}) {
    SolverParams params;
    params.goal = goal;
    params.alignment = alignment;
    params.node_limit = 20'000;
    params.time_limit_seconds = 2.0;
    params.iis_time_limit_seconds = 0.5;
    params.threads = 1 + static_cast<unsigned>(size / 7 % 3);
    params.compute_iis = goal == SolveGoal::kFit && (size & 1) != 0;
    if (goal == SolveGoal::kFit && !problem->capacity) {
      // A capacity from the bytes: around the greedy plan's height.
      if (!greedy.ok()) continue;
      params.capacity = greedy->total - greedy->total / (2 + size % 7);
    }
    Result<SolveResult> r = SolveOffsets(*problem, params);
    if (!r.ok()) {
      fuzz::Check(!r.status().message().empty(), "solver errors carry a message");
      fuzz::Check(r.status().code() == StatusCode::kInvalidArgument || r.status().code() == StatusCode::kOutOfRange,
                  "the solver refuses only bad input or overflow");
      continue;
    }
    const std::optional<std::uint64_t> capacity = params.capacity ? params.capacity : problem->capacity;
    if (r->has_plan) {
      fuzz::Check(ValidateOffsetsPlan(*problem, r->plan, alignment, false).ok(), "solver plans validate");
      fuzz::Check(r->height == r->plan.total, "the height is the plan's");
      fuzz::Check(r->lower_bound <= r->height, "the bound is below the plan");
    }
    if (r->status == SolveStatus::kOptimal || r->status == SolveStatus::kFeasible) {
      fuzz::Check(r->has_plan, "optimal and feasible come with a plan");
      if (capacity) fuzz::Check(r->height <= *capacity, "a feasible plan fits the capacity");
    }
    if (r->status == SolveStatus::kOptimal && greedy.ok())
      fuzz::Check(r->height <= greedy->total, "optimal is never above the greedy plan");
    if (r->status == SolveStatus::kInfeasible && greedy.ok() && capacity)
      fuzz::Check(greedy->total > *capacity, "infeasible only where the greedy plan does not fit either");
    if (r->status == SolveStatus::kInfeasible && params.compute_iis && !r->infeasible_subset.empty()) {
      // The subset alone does not fit; irreducible: without any one buffer it does.
      auto subset_answer = [&](std::size_t skip) {
        Problem sub;
        sub.capacity = problem->capacity;
        for (std::size_t i : r->infeasible_subset)
          if (i != skip) sub.buffers.push_back(problem->buffers[i]);
        SolverParams p = params;
        p.compute_iis = false;
        Result<SolveResult> a = SolveOffsets(sub, p);
        fuzz::Check(a.ok(), "a subset of a valid problem solves");
        return a->status;
      };
      const SolveStatus whole = subset_answer(problem->buffers.size());
      fuzz::Check(whole != SolveStatus::kOptimal && whole != SolveStatus::kFeasible,
                  "the infeasible subset alone does not fit");
      if (r->subset_irreducible)
        for (std::size_t i : r->infeasible_subset)
          fuzz::Check(subset_answer(i) != SolveStatus::kInfeasible,
                      "an irreducible subset fits without any one of its buffers");
    }
  }
  return 0;
}
