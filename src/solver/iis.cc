// SPDX-License-Identifier: Apache-2.0
#include "solver/iis.h"

#include <algorithm>

#include "core/checked_math.h"

namespace tensormem::solver {
namespace {

// Buffers live at a task where the live bytes exceed the capacity; empty
// when there is no such task.
std::vector<std::size_t> OverfullTask(const Problem& problem, std::uint64_t capacity) {
  struct Event {
    TaskIndex task;
    int kind;  // 0 = starts, 1 = ends after
    std::uint64_t bytes;
  };
  std::vector<Event> events;
  for (const Buffer& b : problem.buffers)
    for (const Segment& s : Occupancy(b)) {
      events.push_back({s.first_task, 0, s.hi - s.lo});
      events.push_back({s.last_task, 1, s.hi - s.lo});
    }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.task != b.task ? a.task < b.task : a.kind < b.kind;
  });
  internal::Uint128 live = 0;
  for (const Event& e : events) {
    if (e.kind == 1) {
      live -= e.bytes;
      continue;
    }
    live += e.bytes;
    if (live > capacity) {
      std::vector<std::size_t> out;
      for (std::size_t i = 0; i < problem.buffers.size(); ++i)
        for (const Segment& s : Occupancy(problem.buffers[i]))
          if (s.first_task <= e.task && e.task <= s.last_task) {
            out.push_back(i);
            break;
          }
      return out;
    }
  }
  return {};
}

}  // namespace

Result<IisResult> IrreducibleInfeasibleSubset(const Problem& problem, std::uint64_t capacity,
                                              const SolverParams& params,
                                              std::vector<std::size_t> start) {
  IisResult out;
  std::vector<std::size_t> set = std::move(start);
  if (set.empty()) set = OverfullTask(problem, capacity);
  if (set.empty())
    for (std::size_t i = 0; i < problem.buffers.size(); ++i) set.push_back(i);
  std::sort(set.begin(), set.end());

  SolverParams test = params;
  test.goal = SolveGoal::kFit;
  test.capacity = capacity;
  test.compute_iis = false;
  test.progress_to_stderr = false;
  test.on_progress = nullptr;
  test.initial_plan = nullptr;
  test.threads = 1;  // each test is small; a race would only add threads
  test.time_limit_seconds = params.iis_time_limit_seconds / static_cast<double>(std::max<std::size_t>(set.size(), 1));
  out.irreducible = true;
  const std::vector<std::size_t> candidates = set;
  for (std::size_t drop : candidates) {
    Problem sub;
    sub.capacity = capacity;
    for (std::size_t i : set)
      if (i != drop) sub.buffers.push_back(problem.buffers[i]);
    TM_ASSIGN_OR_RETURN(SolveResult r, SolveOffsets(sub, test));
    if (r.status == SolveStatus::kInfeasible) {
      set.erase(std::find(set.begin(), set.end(), drop));
    } else if (r.status == SolveStatus::kUnknown) {
      out.irreducible = false;
    }
  }
  out.buffers = std::move(set);
  return out;
}

}  // namespace tensormem::solver
