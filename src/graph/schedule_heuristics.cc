// SPDX-License-Identifier: Apache-2.0
// The heuristic orders the scheduler compares:
// - "list": XLA's list scheduler rule, greedy: the ready node that leaves
//   the fewest bytes live (frees the most, allocates the least);
// - "lpmf": PyTorch Inductor's least-peak-memory-first, greedy: the ready
//   node whose step is smallest, then the one leaving the fewest bytes;
// - "bfs": Inductor's breadth-first order: by depth from the sources;
// - "dfs": XLA's DFS scheduler: post-order from the graph outputs, visiting
//   the producers with the most bytes upstream first;
// - "post-order": XLA's post-order: producers in operand order.
// Ties keep the given order.
#include <algorithm>
#include <functional>

#include "graph/schedule_model.h"

namespace tensormem::internal {
namespace {

// Greedy over the ready nodes: `better(a, b)` on their steps.
std::vector<int> Greedy(const OrderModel& model,
                        const std::function<bool(const OrderModel::Step&, const OrderModel::Step&)>& better) {
  const int n = model.nodes();
  std::vector<std::uint64_t> state(model.words(), 0);
  std::uint64_t live = model.initial_live(), peak = live;
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    int pick = -1;
    OrderModel::Step best;
    for (int v = 0; v < n; ++v) {
      if (!model.Ready(state.data(), v)) continue;
      const OrderModel::Step s = model.Run(state.data(), live, peak, v);
      if (pick < 0 || better(s, best)) pick = v, best = s;
    }
    order.push_back(pick);
    peak = std::max(peak, best.during);
    live = best.after;
    model.Apply(state.data(), pick, best.shares);
  }
  return order;
}

std::vector<int> ByDepth(const OrderModel& model) {
  const int n = model.nodes();
  std::vector<int> depth(static_cast<std::size_t>(n), 0), order;
  // Node indices are not topological in general: relax until stable.
  std::vector<int> topo = Greedy(model, [](const auto&, const auto&) { return false; });
  for (int v : topo)
    for (int p : model.preds(v))
      depth[static_cast<std::size_t>(v)] =
          std::max(depth[static_cast<std::size_t>(v)], depth[static_cast<std::size_t>(p)] + 1);
  order = topo;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return depth[static_cast<std::size_t>(a)] < depth[static_cast<std::size_t>(b)];
  });
  return order;
}

// Post-order from the sinks (nodes no node reads from), last node first, so
// the graph outputs' producers are reached first; producers in the order
// `producers(v)` gives.
std::vector<int> PostOrder(const OrderModel& model,
                           const std::function<std::vector<int>(int)>& producers) {
  const int n = model.nodes();
  std::vector<char> has_succ(static_cast<std::size_t>(n), 0), seen(static_cast<std::size_t>(n), 0);
  for (int v = 0; v < n; ++v)
    for (int p : model.preds(v)) has_succ[static_cast<std::size_t>(p)] = 1;
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  // Iterative DFS: (node, next producer index).
  std::vector<std::pair<int, std::vector<int>>> stack;
  auto visit = [&](int root) {
    if (seen[static_cast<std::size_t>(root)]) return;
    seen[static_cast<std::size_t>(root)] = 1;
    stack.emplace_back(root, producers(root));
    while (!stack.empty()) {
      auto& [v, todo] = stack.back();
      if (todo.empty()) {
        order.push_back(v);
        stack.pop_back();
        continue;
      }
      const int p = todo.back();
      todo.pop_back();
      if (seen[static_cast<std::size_t>(p)]) continue;
      seen[static_cast<std::size_t>(p)] = 1;
      stack.emplace_back(p, producers(p));
    }
  };
  for (int v = n - 1; v >= 0; --v)
    if (!has_succ[static_cast<std::size_t>(v)]) visit(v);
  for (int v = 0; v < n; ++v) visit(v);
  return order;
}

}  // namespace

std::vector<NamedOrder> HeuristicOrders(const OrderModel& model) {
  std::vector<NamedOrder> out;
  out.push_back({"list", Greedy(model, [](const auto& a, const auto& b) {
                   return a.after < b.after || (a.after == b.after && a.during < b.during);
                 })});
  out.push_back({"lpmf", Greedy(model, [](const auto& a, const auto& b) {
                   return a.during < b.during || (a.during == b.during && a.after < b.after);
                 })});
  out.push_back({"bfs", ByDepth(model)});
  // Bytes upstream of each node (its own outputs and its producers', counted
  // once per path: an estimate, as XLA's cumulative size).
  const int n = model.nodes();
  std::vector<std::uint64_t> upstream(static_cast<std::size_t>(n), 0);
  for (int v : out.back().order) {
    std::uint64_t u = model.out_bytes(v);
    for (int p : model.preds(v))  // saturating: paths multiply on wide graphs
      u = std::min(u + upstream[static_cast<std::size_t>(p)], std::uint64_t{1} << 62);
    upstream[static_cast<std::size_t>(v)] = u;
  }
  // Producers come off the back of the list: the first visited is the last.
  out.push_back({"dfs", PostOrder(model, [&](int v) {
                   std::vector<int> p = model.preds(v);
                   std::stable_sort(p.begin(), p.end(), [&](int a, int b) {
                     return upstream[static_cast<std::size_t>(a)] < upstream[static_cast<std::size_t>(b)];
                   });
                   return p;
                 })});
  out.push_back({"post-order", PostOrder(model, [&](int v) {
                   std::vector<int> p = model.preds(v);
                   std::reverse(p.begin(), p.end());
                   return p;
                 })});
  return out;
}

}  // namespace tensormem::internal
