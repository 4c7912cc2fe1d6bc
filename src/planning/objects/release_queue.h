// SPDX-License-Identifier: Apache-2.0
// The "objects in use" queue of the TFLite GPU delegate's in-order
// strategies: objects (or tensors) keyed by the last task of their current
// user. Before tensor i is planned, every entry whose last task is < i's
// first task is released, in (last task, id) order; that order is what
// "most recently released" means for the tie-breaks of equality and
// greedy_in_order, and the order of min_cost_flow's reuse candidates.
#pragma once

#include <cstddef>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "tensormem/types.h"

namespace tensormem::planning {

class ReleaseQueue {
 public:
  void Push(TaskIndex last_task, std::size_t id) { queue_.push({last_task, id}); }
  bool empty() const { return queue_.empty(); }

  // Calls release(id) for every entry whose last task is < `task`.
  template <typename Release>
  void ReleaseBefore(TaskIndex task, Release&& release) {
    while (!queue_.empty() && queue_.top().first < task) {
      const std::size_t id = queue_.top().second;
      queue_.pop();
      release(id);
    }
  }

 private:
  using Entry = std::pair<TaskIndex, std::size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue_;
};

}  // namespace tensormem::planning
