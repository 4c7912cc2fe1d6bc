// IntervalIndex: the inclusive task intervals of a fixed set of tensors, any
// subset of them "present", and an output-sensitive query for the present
// intervals that overlap [first, last]. A max-segment tree over the tensors
// sorted by first task, each leaf holding its last task while present, lets a
// query skip every subtree whose present intervals all end before `first`:
// O((k + 1) log n) for k reported. This is what turns the peers' quadratic
// "scan every placed tensor" loops into near-linear ones on real networks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensormem/types.h"

namespace tensormem::planning {

class IntervalIndex {
 public:
  // firsts/lasts: per tensor, inclusive.
  IntervalIndex(const std::vector<TaskIndex>& firsts, const std::vector<TaskIndex>& lasts);

  void Insert(std::size_t tensor) { Set(tensor, lasts_[tensor]); }
  void Erase(std::size_t tensor) { Set(tensor, kAbsent); }
  bool Contains(std::size_t tensor) const {
    return tree_[leaves_ + rank_[tensor]] != kAbsent;
  }

  // Calls visit(tensor) for every present tensor whose interval overlaps
  // [first, last], in order of first task (ties by tensor index).
  template <typename Visit>
  void ForEachOverlapping(TaskIndex first, TaskIndex last, Visit&& visit) const {
    // Present tensors with first_task <= last occupy sorted ranks [0, end).
    std::size_t end = UpperBoundFirst(last);
    if (end == 0) return;
    Walk(1, 0, leaves_ - 1, end - 1, first, visit);
  }

 private:
  static constexpr TaskIndex kAbsent = std::numeric_limits<TaskIndex>::min();

  void Set(std::size_t tensor, TaskIndex value);
  std::size_t UpperBoundFirst(TaskIndex t) const;

  template <typename Visit>
  void Walk(std::size_t node, std::size_t l, std::size_t r, std::size_t hi, TaskIndex first,
            Visit& visit) const {
    if (l > hi || tree_[node] < first) return;
    if (node >= leaves_) {
      visit(sorted_[node - leaves_]);
      return;
    }
    const std::size_t m = l + (r - l) / 2;
    Walk(2 * node, l, m, hi, first, visit);
    Walk(2 * node + 1, m + 1, r, hi, first, visit);
  }

  std::vector<TaskIndex> lasts_;
  std::vector<std::size_t> sorted_;      // tensors by (first, index)
  std::vector<TaskIndex> sorted_first_;  // their first tasks
  std::vector<std::size_t> rank_;        // tensor -> position in sorted_
  std::size_t leaves_ = 1;               // power of two >= n
  std::vector<TaskIndex> tree_;          // 1-based heap of maxima
};

}  // namespace tensormem::planning
