// SPDX-License-Identifier: Apache-2.0
// BuildReallocationGraph: which tensors may share memory under any parallel
// execution order. From a dependency graph of tasks (dependencies[t] = the
// tasks that consume t's output), root and v are adjacent when v is reached
// (strictly, by a path of one or more edges) from every child of root: v then
// runs after everything that reads root's output, in every order. Edges are
// symmetric, each list sorted; tasks without children get none.
//
// Reachability is a bitset per task (O(n^2 / 64) words: 12.5 MB for 10,000
// tasks; the graph itself can have O(n^2) edges), filled in reverse
// topological order (Kahn) in O(E x n / 64); a graph with a cycle falls back
// to one breadth-first search per task. Entries outside [0, n) and self
// loops are ignored.
#include <algorithm>
#include <cstdint>
#include <queue>
#include <span>
#include <vector>

#include "core/topological_order.h"
#include "tensormem/planning.h"

namespace tensormem {
namespace {

using Bits = std::vector<std::uint64_t>;

void SetBit(Bits& b, std::size_t i) { b[i / 64] |= std::uint64_t{1} << (i % 64); }

using Children = std::vector<std::vector<std::size_t>>;

// Each task's children: in range, not itself, sorted, each once.
Children ChildrenOf(std::span<const std::vector<std::size_t>> dependencies) {
  const std::size_t n = dependencies.size();
  Children children(n);
  for (std::size_t t = 0; t < n; ++t) {
    for (std::size_t c : dependencies[t])
      if (c < n && c != t) children[t].push_back(c);
    std::sort(children[t].begin(), children[t].end());
    children[t].erase(std::unique(children[t].begin(), children[t].end()), children[t].end());
  }
  return children;
}

// reach[v]: tasks reached from v by one or more edges. In reverse
// topological order; with a cycle, a breadth-first search per task.
std::vector<Bits> Reachability(const Children& children, std::size_t words) {
  const std::size_t n = children.size();
  std::vector<Bits> reach(n, Bits(words, 0));
  const std::vector<std::size_t> topo = internal::TopologicalOrder<std::size_t>(children);
  if (topo.size() == n) {
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      Bits& r = reach[*it];
      for (std::size_t c : children[*it]) {
        SetBit(r, c);
        for (std::size_t w = 0; w < words; ++w) r[w] |= reach[c][w];
      }
    }
    return reach;
  }
  std::vector<char> seen(n);
  for (std::size_t v = 0; v < n; ++v) {
    std::fill(seen.begin(), seen.end(), 0);
    std::queue<std::size_t> queue;
    for (std::size_t c : children[v]) queue.push(c);
    while (!queue.empty()) {
      const std::size_t u = queue.front();
      queue.pop();
      if (seen[u]) continue;
      seen[u] = 1;
      SetBit(reach[v], u);
      for (std::size_t c : children[u]) queue.push(c);
    }
  }
  return reach;
}

}  // namespace

ReallocationGraph BuildReallocationGraph(std::span<const std::vector<std::size_t>> dependencies) {
  const std::size_t n = dependencies.size();
  const std::size_t words = (n + 63) / 64;
  const Children children = ChildrenOf(dependencies);
  const std::vector<Bits> reach = Reachability(children, words);
  // root - v when every child of root reaches v.
  ReallocationGraph graph(n);
  Bits common(words);
  for (std::size_t root = 0; root < n; ++root) {
    if (children[root].empty()) continue;
    common = reach[children[root][0]];
    for (std::size_t c : children[root])
      for (std::size_t w = 0; w < words; ++w) common[w] &= reach[c][w];
    for (std::size_t w = 0; w < words; ++w)
      for (std::uint64_t bits = common[w]; bits != 0; bits &= bits - 1) {
        const std::size_t v = w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
        if (v == root) continue;
        graph[root].push_back(v);
        graph[v].push_back(root);
      }
  }
  for (auto& adjacent : graph) {
    std::sort(adjacent.begin(), adjacent.end());
    adjacent.erase(std::unique(adjacent.begin(), adjacent.end()), adjacent.end());
  }
  return graph;
}

}  // namespace tensormem
