// SPDX-License-Identifier: Apache-2.0
#include "core/topological_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

namespace tensormem::internal {
namespace {

TEST(TopologicalOrder, SourcesFirstInIndexOrderThenEachAfterItsPredecessors) {
  // 3 -> 1 -> 0, 2 -> 0
  const std::vector<std::vector<int>> succ = {{}, {0}, {0}, {1}};
  EXPECT_EQ(TopologicalOrder<int>(succ), (std::vector<int>{2, 3, 1, 0}));
}

TEST(TopologicalOrder, ACycleLeavesItsNodesAndTheirDescendantsOut) {
  // 0 -> 1 -> 2 -> 1, 2 -> 3; 4 alone
  const std::vector<std::vector<std::size_t>> succ = {{1}, {2}, {1, 3}, {}, {}};
  EXPECT_EQ(TopologicalOrder<std::size_t>(succ), (std::vector<std::size_t>{0, 4}));
}

TEST(TopologicalOrder, RandomDagsComeOutWholeAndInOrder) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    const int n = 1 + static_cast<int>(rng() % 40);
    // Edges from a hidden random permutation's earlier to later nodes.
    std::vector<int> rank(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) rank[static_cast<std::size_t>(i)] = i;
    std::shuffle(rank.begin(), rank.end(), rng);
    std::vector<std::vector<int>> succ(static_cast<std::size_t>(n));
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (rank[static_cast<std::size_t>(a)] < rank[static_cast<std::size_t>(b)] && rng() % 4 == 0)
          succ[static_cast<std::size_t>(a)].push_back(b);
    const std::vector<int> topo = TopologicalOrder<int>(succ);
    ASSERT_EQ(topo.size(), static_cast<std::size_t>(n));
    std::vector<int> position(static_cast<std::size_t>(n), -1);
    for (std::size_t k = 0; k < topo.size(); ++k) position[static_cast<std::size_t>(topo[k])] = static_cast<int>(k);
    for (int a = 0; a < n; ++a)
      for (int b : succ[static_cast<std::size_t>(a)])
        EXPECT_LT(position[static_cast<std::size_t>(a)], position[static_cast<std::size_t>(b)]);
  }
}

}  // namespace
}  // namespace tensormem::internal
