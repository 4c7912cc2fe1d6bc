// SPDX-License-Identifier: Apache-2.0
#include "planning/interval_index.h"

#include <algorithm>
#include <numeric>

namespace tensormem::planning {

IntervalIndex::IntervalIndex(const std::vector<TaskIndex>& firsts,
                             const std::vector<TaskIndex>& lasts)
    : lasts_(lasts), sorted_(firsts.size()), rank_(firsts.size()) {
  std::iota(sorted_.begin(), sorted_.end(), 0);
  // The strategies' records come in task order: then the identity is the
  // stable order, without a sort of indices through the firsts.
  if (!std::is_sorted(firsts.begin(), firsts.end()))
    std::stable_sort(sorted_.begin(), sorted_.end(),
                     [&](std::size_t a, std::size_t b) { return firsts[a] < firsts[b]; });
  sorted_first_.reserve(sorted_.size());
  for (std::size_t k = 0; k < sorted_.size(); ++k) {
    rank_[sorted_[k]] = k;
    sorted_first_.push_back(firsts[sorted_[k]]);
  }
  while (leaves_ < sorted_.size()) leaves_ *= 2;
  tree_.assign(2 * leaves_, kAbsent);
}

void IntervalIndex::Set(std::size_t tensor, TaskIndex value) {
  std::size_t node = leaves_ + rank_[tensor];
  tree_[node] = value;
  for (node /= 2; node >= 1; node /= 2) {
    const TaskIndex m = std::max(tree_[2 * node], tree_[2 * node + 1]);
    if (tree_[node] == m) break;
    tree_[node] = m;
  }
}

std::size_t IntervalIndex::UpperBoundFirst(TaskIndex t) const {
  return static_cast<std::size_t>(
      std::upper_bound(sorted_first_.begin(), sorted_first_.end(), t) - sorted_first_.begin());
}

std::vector<TaskIndex> DistinctSorted(std::vector<TaskIndex> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::size_t RankOf(const std::vector<TaskIndex>& sorted, TaskIndex t) {
  return static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), t) - sorted.begin());
}

std::size_t RankOfLastStartAtOrBefore(const std::vector<TaskIndex>& sorted, TaskIndex t) {
  return static_cast<std::size_t>(std::upper_bound(sorted.begin(), sorted.end(), t) - sorted.begin()) - 1;
}

}  // namespace tensormem::planning
