// SPDX-License-Identifier: Apache-2.0
// Kahn's topological order of a directed graph given as each node's
// successors (internal): the one the task graphs of the planners and the
// execution-order model share.
#pragma once

#include <cstddef>
#include <vector>

namespace tensormem::internal {

// Nodes 0..n-1 (n = successors.size()), each after all of its
// predecessors, the nodes with none first in index order; fewer than n
// when there is a cycle (the nodes on or after it are left out).
template <typename Index, typename Successors>
std::vector<Index> TopologicalOrder(const Successors& successors) {
  const std::size_t n = successors.size();
  std::vector<std::size_t> in_degree(n, 0);
  std::vector<Index> topo;
  topo.reserve(n);
  for (std::size_t v = 0; v < n; ++v)
    for (const auto s : successors[v]) ++in_degree[static_cast<std::size_t>(s)];
  for (std::size_t v = 0; v < n; ++v)
    if (in_degree[v] == 0) topo.push_back(static_cast<Index>(v));
  for (std::size_t k = 0; k < topo.size(); ++k)
    for (const auto s : successors[static_cast<std::size_t>(topo[k])])
      if (--in_degree[static_cast<std::size_t>(s)] == 0) topo.push_back(static_cast<Index>(s));
  return topo;
}

}  // namespace tensormem::internal
