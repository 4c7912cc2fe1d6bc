// SPDX-License-Identifier: Apache-2.0
// Execution order: a topological order of a graph's nodes that lowers the
// peak of live scratch bytes (the arena's lower bound) under the graph
// planner's own liveness (reference counting, in-place chains, graph inputs
// and outputs never freed).
//
// kBest runs the heuristic orders (XLA's list scheduler and DFS and
// post-order schedulers, PyTorch Inductor's LPMF and BFS) and keeps the best
// of them and the given order, so it is never worse than the given order.
// kExact then searches the sets of nodes already run (SERENITY's dynamic
// programming over downsets, memoised, with a dominance rule), one segment
// between two chokepoints at a time: a beam of the best states first, whose
// order is the first upper bound, then passes that ask whether some order
// is under a bound (rising from the lower bound, searching from both ends
// of the segment, where no node may write in place; from the best peak
// known down otherwise); it proves the minimum peak when it finishes within the
// time limit and the state budget, and otherwise keeps the best order found
// with the lower bound it proved. kJoint keeps every distinct order kExact
// met (the given one, each heuristic's, the beam's, the search's) as
// candidates: the graph planner (PlanGraph) places each with its offsets
// strategy and keeps the smallest arena, since the order of the lowest peak
// does not always give the smallest arena. Every peak reported is computed
// with ComputeLiveness on the reordered graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensormem/defaults.h"
#include "tensormem/status.h"

namespace tensormem {

struct Graph;
struct LivenessParams;

enum class OrderStrategy : std::uint8_t {
  kGiven,  // the graph's node order
  kBest,   // the best of the heuristic orders and the given order
  kExact,  // kBest, then the exact search (anytime, under the time limit)
  kJoint,  // kExact's orders as candidates: the planner keeps the smallest arena
};

std::string_view Name(OrderStrategy order);
Result<OrderStrategy> ParseOrderStrategy(std::string_view name);
std::span<const OrderStrategy> AllOrderStrategies();

// Defaults: tensormem/defaults.h (kOrder names `order`'s).
struct ScheduleParams {
  OrderStrategy order = OrderStrategy::kGiven;
  // The exact search's limits (beam included): wall-clock seconds (<= 0:
  // none), the number of search states it may keep and the bytes they may
  // take (fewer states on graphs of many nodes: wider keys). Past any it
  // stops and keeps the best order found, with the lower bound proved so far.
  double time_limit_seconds = defaults::kOrderTimeLimitSeconds;
  std::size_t max_states = defaults::kOrderMaxStates;
  std::size_t max_state_bytes = defaults::kOrderMaxStateBytes;
  // States the beam (run before the exact search) keeps per level.
  std::size_t beam_width = defaults::kOrderBeamWidth;
};

// An order kJoint compares: its peak, and the scratch arena the planner
// made in it (GraphPlan; 0 until placed).
struct OrderCandidate {
  std::string method;
  std::vector<int> order;
  std::uint64_t peak = 0;
  std::uint64_t arena = 0;
  bool placed = false;  // false: the planner's time ran out before it
};

struct Schedule {
  // Node indices in execution order (a permutation of the graph's nodes).
  std::vector<int> order;
  // What found the order: "given", "list", "dfs", "post-order", "lpmf",
  // "bfs", "exact" or (kJoint) "beam", the exact search's first order.
  std::string method = "given";
  std::uint64_t given_peak = 0;   // peak live scratch bytes in the given order
  std::uint64_t peak = 0;         // ... in `order`
  // No order has a lower peak; none where not computed (kGiven, which
  // builds no order model): the CLI's JSON and Python report it as null /
  // None.
  std::optional<std::uint64_t> lower_bound;
  bool proved_optimal = false;  // peak == lower_bound
  std::size_t states = 0;         // search states the exact search kept
  double seconds = 0;
  // kJoint: the distinct orders compared, the given order first, then by
  // peak; `order` is the one whose arena was smallest.
  std::vector<OrderCandidate> candidates;
};

// The identity order 0, 1, ..., nodes - 1.
std::vector<int> GivenOrder(const Graph& graph);

// Checks `order` is a permutation of the nodes in which every tensor is
// written before any node reads it; names the node at fault.
Status CheckOrder(const Graph& graph, std::span<const int> order);

// The graph with its nodes in `order` (checked with CheckOrder).
Result<Graph> ReorderGraph(const Graph& graph, std::span<const int> order);

// The graph in `order` without a copy where it can: `&graph` itself when
// `order` is the given one, else `storage` holding ReorderGraph's copy.
Result<const Graph*> GraphInOrder(const Graph& graph, std::span<const int> order, Graph* storage);

// The peak of live scratch bytes (unaligned) when the nodes run in `order`:
// the largest sum, over a node, of the sizes of the scratch buffers live at
// it, from ComputeLiveness on the reordered graph.
Result<std::uint64_t> PeakLiveBytes(const Graph& graph, std::span<const int> order,
                                    const LivenessParams& liveness);

// The order params.order asks for, its peak and the given order's.
Result<Schedule> ScheduleGraph(const Graph& graph, const ScheduleParams& params,
                               const LivenessParams& liveness);

}  // namespace tensormem
