// SPDX-License-Identifier: Apache-2.0
// arena: the order of TensorFlow Lite's ArenaPlanner feeding its
// SimpleMemoryArena: buffers live for the whole run (from the first task to
// the last) first, by index; then by size, largest first; ties by earlier
// first task, then index. Each takes the best-fitting gap (best_fit.h).
#include <algorithm>
#include <numeric>
#include <string>

#include "planning/offsets/offsets_strategies.h"

namespace tensormem::planning {

Result<OffsetsPlan> ArenaOffsets(const Problem& problem, const PlanParams& params) {
  internal::Deadline deadline(params.time_limit_seconds, params.should_stop);
  const auto& bufs = problem.buffers;
  TaskIndex min_first = 0, max_last = 0;
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    min_first = i ? std::min(min_first, bufs[i].first_task) : bufs[i].first_task;
    max_last = i ? std::max(max_last, bufs[i].last_task) : bufs[i].last_task;
  }
  const std::vector<bool>* marked = params.arena_whole_run;
  if (marked && marked->size() != bufs.size())
    return InvalidArgument("arena: " + std::to_string(marked->size()) + " whole-run flags for " +
                           std::to_string(bufs.size()) + " buffers");
  auto whole_run = [&](std::size_t i) {
    if (marked) return static_cast<bool>((*marked)[i]);
    return bufs[i].first_task == min_first && bufs[i].last_task == max_last;
  };
  std::vector<std::size_t> order(bufs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const bool wa = whole_run(a), wb = whole_run(b);
    if (wa || wb) return wa != wb ? wa : a < b;
    if (bufs[a].size != bufs[b].size) return bufs[a].size > bufs[b].size;
    if (bufs[a].first_task != bufs[b].first_task) return bufs[a].first_task < bufs[b].first_task;
    return a < b;
  });
  return PlaceInOrder(problem, order, params, &deadline);
}

}  // namespace tensormem::planning
