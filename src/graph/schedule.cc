// SPDX-License-Identifier: Apache-2.0
// The scheduler's entry points: orders checked and applied, peaks from
// ComputeLiveness, and ScheduleGraph keeping the best of the given order,
// the heuristic orders and (kExact, kJoint) the exact search; kJoint
// also keeps every distinct order as a candidate for the planner.
#include "tensormem/schedule.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/parse_name.h"
#include "graph/schedule_model.h"
#include "tensormem/graph.h"

namespace tensormem {
namespace {

constexpr OrderStrategy kOrderStrategies[] = {OrderStrategy::kGiven, OrderStrategy::kBest,
                                              OrderStrategy::kExact, OrderStrategy::kJoint};

}  // namespace

std::string_view Name(OrderStrategy order) {
  switch (order) {
    case OrderStrategy::kGiven: return "given";
    case OrderStrategy::kBest: return "best";
    case OrderStrategy::kExact: return "exact";
    case OrderStrategy::kJoint: return "joint";
  }
  return "unknown";
}

Result<OrderStrategy> ParseOrderStrategy(std::string_view name) {
  return internal::ParseName<OrderStrategy>(name, kOrderStrategies, "order");
}

std::span<const OrderStrategy> AllOrderStrategies() { return kOrderStrategies; }

std::vector<int> GivenOrder(const Graph& graph) {
  std::vector<int> order(graph.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

Status CheckOrder(const Graph& graph, std::span<const int> order) {
  const std::size_t n = graph.nodes.size();
  if (order.size() != n)
    return InvalidArgument("order: " + std::to_string(order.size()) + " nodes for a graph of " +
                           std::to_string(n));
  std::vector<int> step(n, -1);
  for (std::size_t k = 0; k < n; ++k) {
    const int v = order[k];
    if (v < 0 || static_cast<std::size_t>(v) >= n)
      return InvalidArgument("order: position " + std::to_string(k) + " names node " +
                             std::to_string(v) + ", not in [0, " + std::to_string(n) + ")");
    if (step[static_cast<std::size_t>(v)] >= 0)
      return InvalidArgument("order: " + NodeLabel(graph, static_cast<std::size_t>(v)) +
                             " appears twice");
    step[static_cast<std::size_t>(v)] = static_cast<int>(k);
  }
  std::vector<int> writer(graph.tensors.size(), -1);
  for (std::size_t v = 0; v < n; ++v)
    for (int t : graph.nodes[v].outputs)
      if (t >= 0 && static_cast<std::size_t>(t) < writer.size()) writer[static_cast<std::size_t>(t)] = static_cast<int>(v);
  for (std::size_t v = 0; v < n; ++v)
    for (int t : graph.nodes[v].inputs) {
      if (t < 0 || static_cast<std::size_t>(t) >= writer.size()) continue;
      const int w = writer[static_cast<std::size_t>(t)];
      if (w >= 0 && step[static_cast<std::size_t>(w)] > step[v])
        return InvalidArgument("order: " + NodeLabel(graph, v) + " reads " + TensorLabel(graph, t) +
                               " before " + NodeLabel(graph, static_cast<std::size_t>(w)) +
                               " writes it");
    }
  return Status::Ok();
}

Result<Graph> ReorderGraph(const Graph& graph, std::span<const int> order) {
  TM_RETURN_IF_ERROR(CheckOrder(graph, order));
  Graph g;
  g.tensors = graph.tensors;
  g.inputs = graph.inputs;
  g.outputs = graph.outputs;
  g.nodes.reserve(order.size());
  for (int v : order) g.nodes.push_back(graph.nodes[static_cast<std::size_t>(v)]);
  return g;
}

Result<const Graph*> GraphInOrder(const Graph& graph, std::span<const int> order, Graph* storage) {
  // The given order needs no check CheckGraph (in ComputeLiveness) does not make.
  bool given = order.size() == graph.nodes.size();
  for (std::size_t i = 0; i < order.size() && given; ++i) given = order[i] == static_cast<int>(i);
  if (given) return &graph;
  TM_ASSIGN_OR_RETURN(*storage, ReorderGraph(graph, order));
  return storage;
}

Result<std::uint64_t> PeakLiveBytes(const Graph& graph, std::span<const int> order,
                                    const LivenessParams& liveness) {
  Graph storage;  // a graph of a million nodes is copied only when reordered
  TM_ASSIGN_OR_RETURN(const Graph* g, GraphInOrder(graph, order, &storage));
  TM_ASSIGN_OR_RETURN(const Liveness live, ComputeLiveness(*g, liveness));
  std::vector<std::int64_t> delta(static_cast<std::size_t>(live.last_node) + 2, 0);
  for (std::size_t t = 0; t < live.tensors.size(); ++t) {
    const TensorLiveness& l = live.tensors[t];
    if (l.arena != Arena::kScratch || l.root != static_cast<int>(t)) continue;
    delta[static_cast<std::size_t>(l.first_node)] += static_cast<std::int64_t>(graph.tensors[t].bytes);
    delta[static_cast<std::size_t>(l.last_node) + 1] -= static_cast<std::int64_t>(graph.tensors[t].bytes);
  }
  std::int64_t now = 0, peak = 0;
  for (std::int64_t d : delta) peak = std::max(peak, now += d);
  return static_cast<std::uint64_t>(peak);
}

namespace {

// Adds `order` to the joint candidates unless an equal order is there.
void AddCandidate(Schedule& s, const char* method, const std::vector<int>& order, std::uint64_t peak) {
  for (const OrderCandidate& c : s.candidates)
    if (c.order == order) return;
  s.candidates.push_back({method, order, peak});
}

// The given order first (never worse than it), then by peak (the lowest
// peaks are placed first should the planner's time run out).
void SortCandidates(Schedule& s) {
  std::stable_sort(s.candidates.begin() + 1, s.candidates.end(),
                   [](const OrderCandidate& a, const OrderCandidate& b) { return a.peak < b.peak; });
}

// The heuristic orders (returned): the best into `best`, each one a
// candidate (joint).
Result<std::vector<std::vector<int>>> RunHeuristics(const Graph& graph, const internal::OrderModel& model,
                                                    const LivenessParams& liveness, bool joint, Schedule& best) {
  std::vector<std::vector<int>> orders;
  for (internal::NamedOrder& h : internal::HeuristicOrders(model)) {
    TM_ASSIGN_OR_RETURN(const std::uint64_t peak, PeakLiveBytes(graph, h.order, liveness));
    if (joint) AddCandidate(best, h.method, h.order, peak);
    if (peak < best.peak) best.peak = peak, best.order = h.order, best.method = h.method;
    orders.push_back(std::move(h.order));
  }
  return orders;
}

// The exact search from the heuristic orders; its order, when below the
// best so far, is the best (and a candidate), and the beam's a candidate.
Status RunExact(const Graph& graph, const internal::OrderModel& model, std::vector<std::vector<int>> starts,
                const ScheduleParams& params, const LivenessParams& liveness, bool joint, Schedule& best) {
  starts.insert(starts.begin(), best.order);
  internal::ExactResult r = internal::ExactOrder(model, starts, best.lower_bound.value_or(0), params);
  best.states = r.states;
  best.lower_bound = std::max(best.lower_bound.value_or(0), std::min(r.lower_bound, best.peak));
  if (joint && !r.beam_order.empty()) {
    TM_ASSIGN_OR_RETURN(const std::uint64_t beam_peak, PeakLiveBytes(graph, r.beam_order, liveness));
    AddCandidate(best, "beam", r.beam_order, beam_peak);
  }
  if (r.order.empty() || r.peak >= best.peak) return Status::Ok();
  TM_ASSIGN_OR_RETURN(const std::uint64_t peak, PeakLiveBytes(graph, r.order, liveness));
  if (peak != r.peak)
    return Internal("exact order: the search priced its order at " + std::to_string(r.peak) +
                    " bytes, the liveness at " + std::to_string(peak));
  if (joint) AddCandidate(best, "exact", r.order, peak);
  best.peak = peak, best.order = std::move(r.order), best.method = "exact";
  return Status::Ok();
}

// The order the model searches: the best of the heuristics and (kExact,
// kJoint) the exact search's.
Status SearchOrder(const Graph& graph, const Liveness& live, const ScheduleParams& params,
                   const LivenessParams& liveness, bool joint, Schedule& best) {
  const internal::OrderModel model(graph, live, liveness);
  best.lower_bound = std::min(best.peak, model.CoLiveBound());
  TM_ASSIGN_OR_RETURN(std::vector<std::vector<int>> starts, RunHeuristics(graph, model, liveness, joint, best));
  if (params.order == OrderStrategy::kExact || joint)
    TM_RETURN_IF_ERROR(RunExact(graph, model, std::move(starts), params, liveness, joint, best));
  return Status::Ok();
}

}  // namespace

Result<Schedule> ScheduleGraph(const Graph& graph, const ScheduleParams& params,
                               const LivenessParams& liveness) {
  const auto start = std::chrono::steady_clock::now();
  Schedule best;
  best.order = GivenOrder(graph);
  TM_ASSIGN_OR_RETURN(best.given_peak, PeakLiveBytes(graph, best.order, liveness));
  best.peak = best.given_peak;
  const bool joint = params.order == OrderStrategy::kJoint;
  if (joint) AddCandidate(best, "given", best.order, best.peak);
  // The given order asked for: no model, no bound to compute. Every order
  // alike (nothing is freed when all tensors are preserved): the given
  // order's peak is the bound.
  if (params.order != OrderStrategy::kGiven) best.lower_bound = best.given_peak;
  if (params.order != OrderStrategy::kGiven && !liveness.preserve_all_tensors) {
    TM_ASSIGN_OR_RETURN(const Liveness live, ComputeLiveness(graph, liveness));
    TM_RETURN_IF_ERROR(SearchOrder(graph, live, params, liveness, joint, best));
  }
  if (joint) SortCandidates(best);
  best.proved_optimal = best.lower_bound == best.peak;
  best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return best;
}

}  // namespace tensormem
