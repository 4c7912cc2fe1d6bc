// greedy_in_order (offsets): buffers by first task (ties: larger first, then
// index), each at the best-fitting gap (best_fit.h). In this order the placed
// buffers a buffer conflicts with are those still live at its first task, so
// this replays the trace through an online best-fit allocator that never
// moves a block. It is the order that suits grow-and-copy shapes (a model's
// weights converted one by one, a KV cache copied into a larger one): each
// copy lands in the holes its predecessors' originals left, where the
// size-first and breadth-first orders, which place the long-lived copies
// before the short-lived originals, stack them above the peak
// (gpt2_medium_generate: 1.0634 x the peak live bytes with those, the peak
// itself with this one).
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "planning/offsets/offsets_strategies.h"

namespace tensormem::planning {

Result<OffsetsPlan> GreedyInOrderOffsets(const Problem& problem, const PlanParams& params) {
  internal::Deadline deadline(params.time_limit_seconds, params.should_stop);
  const auto& bufs = problem.buffers;
  std::vector<std::size_t> order(bufs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (bufs[a].first_task != bufs[b].first_task) return bufs[a].first_task < bufs[b].first_task;
    if (bufs[a].size != bufs[b].size) return bufs[a].size > bufs[b].size;
    return a < b;
  });
  return PlaceInOrder(problem, order, params, &deadline);
}

}  // namespace tensormem::planning
