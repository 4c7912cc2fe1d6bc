// SPDX-License-Identifier: Apache-2.0
// min_cost_flow (objects), TFLite GPU's MinCostFlowAssignment. A bipartite
// flow graph: source -> "tensor j finished" (cap 1, cost 0), "tensor i wants
// an object" -> sink (cap 1, cost 0), source -> "i wants" (cost size_i: a new
// object), and "j finished" -> "i wants" for every j released before i
// starts (cost max(0, size_i - size_j): i reuses j's object, growing it).
// A min-cost max-flow saturates one edge into every "i wants"; following the
// saturated j -> i edges from each new object gives the tensors on it, and
// the object is as large as the largest of them. Costs are signed 128-bit, so
// multi-GiB tensors cannot overflow them (TFLite uses int).
//
// Reference: the literal transcription (every released tensor is a
// candidate, so O(n^2) edges, and one SPFA shortest path per tensor: about
// O(n^3) -- 1.5 s for 500 records); limited to kReferenceMaxRecords records.
//
// Default: up to kExactMaxRecords records, the reference itself (TFLite's
// exact choices, a few ms there). Above that, the same graph with each
// tensor's candidates cut to a window (the 32 most recently released tensors
// plus the 32 most recently released ones whose object is still unused),
// solved exactly by incremental successive shortest paths: tensors are added
// in order and each one's augmenting path is found by a Dijkstra run
// backwards from "i wants" with node potentials (reduced costs stay
// non-negative), which touches only the neighbourhood of the window. The
// flow is optimal for the windowed graph, not for TFLite's full one, so its
// plans differ; docs/design/shared_objects.md has the measured difference in plan
// size. About 0.3 s for 10,000 network-like records and 3 s for 100,000; it
// gives up with an error after kMaxRelaxed relaxed edges (work_budget.h).
#include "planning/objects/min_cost_flow.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <set>
#include <string>
#include <utility>

#include "core/checked_math.h"
#include "planning/objects/objects_strategies.h"
#include "planning/objects/release_queue.h"
#include "planning/objects/work_budget.h"

namespace tensormem::planning {
namespace {

using internal::Int128;

constexpr std::size_t kReferenceMaxRecords = 500;
// Default path: inputs up to this size run the reference (it reproduces
// TFLite's exact choices and takes at most a few ms there).
constexpr std::size_t kExactMaxRecords = 100;
// Default path: edges relaxed by the searches before giving up (about 15 s).
constexpr std::uint64_t kMaxRelaxed = 400'000'000;
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

Int128 ReuseCost(std::uint64_t wanted, std::uint64_t available) {
  return wanted > available ? Int128{wanted - available} : Int128{0};
}

// ---------------------------------------------------------------- reference

class ReferenceSolver {
 public:
  explicit ReferenceSolver(std::span<const UsageRecord> records)
      : records_(records), n_(records.size()), source_(2 * n_), sink_(2 * n_ + 1) {
    edges_from_.resize(sink_ + 1);
    std::vector<std::size_t> old_record_ids;
    ReleaseQueue in_use;
    for (std::size_t i = 0; i < n_; ++i) {
      in_use.ReleaseBefore(records[i].first_task,
                           [&](std::size_t j) { old_record_ids.push_back(j); });
      in_use.Push(records[i].last_task, i);
      AddEdge(source_, i, 1, 0);
      AddEdge(RightTwin(i), sink_, 1, 0);
      AddEdge(source_, RightTwin(i), 1, Int128{records[i].size});
      for (std::size_t j : old_record_ids)
        AddEdge(j, RightTwin(i), 1, ReuseCost(records[i].size, records[j].size));
    }
  }

  // Shortest Path Faster Algorithm, one augmenting path at a time.
  void Solve() {
    const Int128 kInf = Int128{1} << 120;
    std::vector<std::size_t> prev_edge(sink_ + 1);
    while (true) {
      std::deque<std::size_t> queue;
      std::vector<char> inside(sink_ + 1, 0);
      std::vector<Int128> dist(sink_ + 1, kInf);
      dist[source_] = 0;
      queue.push_back(source_);
      inside[source_] = 1;
      while (!queue.empty()) {
        const std::size_t v = queue.front();
        queue.pop_front();
        inside[v] = 0;
        for (std::size_t e : edges_from_[v]) {
          const Edge& edge = edges_[e];
          if (edge.cap > 0 && dist[edge.dst] > dist[v] + edge.cost) {
            dist[edge.dst] = dist[v] + edge.cost;
            prev_edge[edge.dst] = e;
            if (!inside[edge.dst]) {
              queue.push_back(edge.dst);
              inside[edge.dst] = 1;
            }
          }
        }
      }
      if (dist[sink_] == kInf) break;
      for (std::size_t v = sink_; v != source_; v = edges_[prev_edge[v] ^ 1].dst) {
        --edges_[prev_edge[v]].cap;
        ++edges_[prev_edge[v] ^ 1].cap;
      }
    }
  }

  ObjectsPlan Assignment() {
    ObjectsPlan plan;
    plan.object_of.assign(n_, kNone);
    for (std::size_t e : edges_from_[source_]) {
      const Edge& edge = edges_[e];
      if (edge.cap == 0 && IsRight(edge.dst)) {
        const std::uint64_t size = AssignChain(LeftTwin(edge.dst), plan);
        plan.object_sizes.push_back(size);
      }
    }
    return plan;
  }

 private:
  struct Edge {
    std::size_t dst;
    int cap;
    Int128 cost;
  };

  void AddEdge(std::size_t src, std::size_t dst, int cap, Int128 cost) {
    edges_from_[src].push_back(edges_.size());
    edges_.push_back({dst, cap, cost});
    edges_from_[dst].push_back(edges_.size());
    edges_.push_back({src, 0, -cost});
  }
  bool IsRight(std::size_t v) const { return v >= n_ && v < 2 * n_; }
  std::size_t LeftTwin(std::size_t v) const { return v - n_; }
  std::size_t RightTwin(std::size_t v) const { return v + n_; }

  // TFLite recurses along the saturated edges; a tensor's object is reused
  // by at most one later tensor, so the recursion is a chain: walk it.
  std::uint64_t AssignChain(std::size_t tensor, ObjectsPlan& plan) {
    std::uint64_t size = 0;
    const std::size_t object = plan.object_sizes.size();
    for (std::size_t t = tensor; t != kNone;) {
      size = std::max(size, records_[t].size);
      plan.object_of[t] = object;
      std::size_t next = kNone;
      for (std::size_t e : edges_from_[t]) {
        const Edge& edge = edges_[e];
        if (edge.cap == 0 && IsRight(edge.dst) && plan.object_of[LeftTwin(edge.dst)] == kNone) {
          next = LeftTwin(edge.dst);
          break;
        }
      }
      t = next;
    }
    return size;
  }

  std::span<const UsageRecord> records_;
  std::size_t n_, source_, sink_;
  std::vector<Edge> edges_;
  std::vector<std::vector<std::size_t>> edges_from_;
};

// ---------------------------------------------------------------- default

// Incremental successive shortest paths. Nodes: the source S, "j finished"
// (L_j, once j is released) and "i wants" (R_i). Residual edges:
//   S -> L_j        while j's object is not reused        cost 0
//   L_j -> S        never used (S is only a path start)
//   S -> R_k        while k reuses an object              cost size_k
//   R_k -> S        while k has a new object              cost -size_k
//   L_j -> R_k      j a candidate of k, not matched       cost reuse(j, k)
//   R_k -> L_j      k reuses j's object                   cost -reuse(j, k)
// Adding R_i, the cheapest S ~> R_i path is augmented; a Dijkstra from R_i
// over reversed edges, with potentials pi (pi(v) = p[v] - offset) that keep
// every reduced cost c + pi(u) - pi(v) >= 0, finds it.
class WindowedSolver {
 public:
  WindowedSolver(std::span<const UsageRecord> records, MinCostFlowWindow window,
                 const PlanParams* params)
      : r_(records),
        n_(records.size()),
        window_(window),
        p_left_(n_, 0),
        p_right_(n_, 0),
        token_of_(n_, kNone),
        user_of_(n_, kNone),
        dist_left_(n_),
        dist_right_(n_),
        seen_left_(n_, 0),
        seen_right_(n_, 0),
        done_left_(n_, 0),
        done_right_(n_, 0),
        next_left_(n_),
        next_right_(n_),
        budget_(kMaxRelaxed, params) {
    candidates_begin_.reserve(n_ + 1);
    candidates_begin_.push_back(0);
  }

  Result<ObjectsPlan> Run() {
    ReleaseQueue in_use;
    for (std::size_t i = 0; i < n_; ++i) {
      if (budget_.Exhausted()) return budget_.Error("min_cost_flow", n_);
      in_use.ReleaseBefore(r_[i].first_task, [&](std::size_t j) { Release(j); });
      in_use.Push(r_[i].last_task, i);
      AddWant(i);
      Augment(i);
    }
    ObjectsPlan plan;
    plan.object_of.assign(n_, 0);
    for (std::size_t i = 0; i < n_; ++i) {
      if (token_of_[i] != kNew) continue;
      const std::size_t object = plan.object_sizes.size();
      std::uint64_t size = 0;
      for (std::size_t t = i; t != kNone; t = user_of_[t]) {
        plan.object_of[t] = object;
        size = std::max(size, r_[t].size);
      }
      plan.object_sizes.push_back(size);
    }
    return plan;
  }

 private:
  static constexpr std::size_t kNew = kNone - 1;  // token_of: a new object
  // Node ids for the search: L_j = j, R_k = n + k, S = 2n.
  std::size_t Source() const { return 2 * n_; }

  Int128 Pi(Int128 p) const { return p - offset_; }
  Int128 PiSource() const { return Pi(p_source_); }

  void Release(std::size_t j) {
    released_.push_back(j);
    unused_.insert(released_.size() - 1);
    rank_of_[j] = released_.size() - 1;
    p_left_[j] = p_source_;  // S -> L_j has reduced cost 0
  }

  // R_i joins with its candidate edges; its potential makes every edge into
  // it non-negative.
  void AddWant(std::size_t i) {
    const std::size_t released = released_.size();
    const std::size_t recent_from = released > window_.recent ? released - window_.recent : 0;
    for (std::size_t k = recent_from; k < released; ++k) candidates_.push_back(released_[k]);
    std::size_t extra = 0;
    for (auto it = unused_.lower_bound(recent_from); it != unused_.begin() && extra < window_.unused;
         ++extra) {
      --it;
      candidates_.push_back(released_[*it]);
    }
    candidates_begin_.push_back(candidates_.size());
    Int128 pi = PiSource() + Int128{r_[i].size};
    for (std::size_t c = candidates_begin_[i]; c < candidates_begin_[i + 1]; ++c) {
      const std::size_t j = candidates_[c];
      pi = std::min(pi, ReuseCost(r_[i].size, r_[j].size) + Pi(p_left_[j]));
    }
    p_right_[i] = pi + offset_;
  }

  // Backward Dijkstra from R_i to S, then augment and update potentials.
  void Augment(std::size_t i) {
    Search(i);
    AugmentPath(i);
    UpdatePotentials();
  }

  // Distances to R_i over reversed residual edges, until S is reached.
  void Search(std::size_t i) {
    ++epoch_;
    heap_ = decltype(heap_)();
    finished_.clear();
    source_seen_ = false;
    source_dist_ = 0;
    source_next_ = kNone;
    Offer(n_ + i, 0, kNone);
    while (!heap_.empty()) {
      const auto [d, key] = heap_.top();
      heap_.pop();
      if (key == 0) break;  // the source: distances are exact from here on
      const std::size_t node = key - 1;
      if (node < n_) {
        ExpandLeft(node, d);
      } else {
        ExpandRight(node - n_, d);
      }
    }
  }

  // `node` at distance d from R_i through `next`, if that is shorter.
  void Offer(std::size_t node, Int128 d, std::size_t next) {
    if (node == Source()) {
      if (!source_seen_ || d < source_dist_) {
        source_seen_ = true;
        source_dist_ = d;
        source_next_ = next;
        heap_.push({d, 0});
      }
    } else if (node < n_) {
      if (seen_left_[node] != epoch_ || d < dist_left_[node]) {
        seen_left_[node] = epoch_;
        dist_left_[node] = d;
        next_left_[node] = next;
        heap_.push({d, node + 1});
      }
    } else {
      const std::size_t k = node - n_;
      if (seen_right_[k] != epoch_ || d < dist_right_[k]) {
        seen_right_[k] = epoch_;
        dist_right_[k] = d;
        next_right_[k] = next;
        heap_.push({d, node + 1});
      }
    }
  }

  // L_j reached at distance d: the edges into it, reversed.
  void ExpandLeft(std::size_t j, Int128 d) {
    if (done_left_[j] == epoch_ || d != dist_left_[j]) return;
    done_left_[j] = epoch_;
    finished_.push_back(j);
    const Int128 pj = Pi(p_left_[j]);
    if (user_of_[j] == kNone) {
      Offer(Source(), d + PiSource() - pj, j);  // S -> L_j
    } else {
      const std::size_t u = user_of_[j];  // R_u -> L_j (reverse of the match)
      Offer(n_ + u, d - ReuseCost(r_[u].size, r_[j].size) + Pi(p_right_[u]) - pj, j);
    }
  }

  // R_k reached at distance d: the edges into it, reversed.
  void ExpandRight(std::size_t k, Int128 d) {
    if (done_right_[k] == epoch_ || d != dist_right_[k]) return;
    done_right_[k] = epoch_;
    budget_.Spend(1 + candidates_begin_[k + 1] - candidates_begin_[k]);
    const std::size_t node = n_ + k;
    finished_.push_back(node);
    const Int128 pk = Pi(p_right_[k]);
    if (token_of_[k] != kNew)  // S -> R_k
      Offer(Source(), d + PiSource() + Int128{r_[k].size} - pk, node);
    for (std::size_t c = candidates_begin_[k]; c < candidates_begin_[k + 1]; ++c) {
      const std::size_t j = candidates_[c];
      if (token_of_[k] == j) continue;  // matched: only the reverse edge is residual
      Offer(j, d + ReuseCost(r_[k].size, r_[j].size) + Pi(p_left_[j]) - pk, node);
    }
  }

  // Augment along S -> ... -> R_i.
  void AugmentPath(std::size_t i) {
    std::size_t node = source_next_;
    if (node < n_) {
      unused_.erase(rank_of_[node]);  // S -> L_j: j's object is now reused
    } else {
      token_of_[node - n_] = kNew;  // S -> R_k: k takes a new object
    }
    while (node != n_ + i) {
      std::size_t next;
      if (node < n_) {
        next = next_left_[node];  // L_j -> R_k: k now reuses j's object
        token_of_[next - n_] = node;
        user_of_[node] = next - n_;
      } else {
        next = next_right_[node - n_];  // R_k -> L_j: j is handed on
      }
      node = next;
    }
  }

  // pi(v) -= min(dist(v), D): finished nodes by their distance, all others
  // (and S) by D through the offset.
  void UpdatePotentials() {
    for (std::size_t v : finished_) {
      if (v < n_) {
        p_left_[v] += source_dist_ - dist_left_[v];
      } else {
        p_right_[v - n_] += source_dist_ - dist_right_[v - n_];
      }
    }
    offset_ += source_dist_;
  }

  std::span<const UsageRecord> r_;
  std::size_t n_;
  MinCostFlowWindow window_;
  Int128 p_source_ = 0, offset_ = 0;
  std::vector<Int128> p_left_, p_right_;
  std::vector<std::size_t> token_of_;  // per R_k: the tensor whose object k reuses, or kNew
  std::vector<std::size_t> user_of_;   // per L_j: the tensor that reuses j's object
  std::vector<std::size_t> released_;  // release order
  std::vector<std::size_t> rank_of_ = std::vector<std::size_t>(n_, 0);
  std::set<std::size_t> unused_;  // release ranks of tensors whose object is not reused
  std::vector<std::size_t> candidates_, candidates_begin_;
  // Search state, stamped with the epoch to avoid clearing.
  std::vector<Int128> dist_left_, dist_right_;
  std::vector<std::uint32_t> seen_left_, seen_right_, done_left_, done_right_;
  std::vector<std::size_t> next_left_, next_right_;  // next node towards R_i
  std::vector<std::size_t> finished_;
  std::uint32_t epoch_ = 0;
  // (distance to R_i, node + 1), the source as 0: on equal distances the
  // search stops as early as it can.
  using Entry = std::pair<Int128, std::size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  Int128 source_dist_ = 0;
  bool source_seen_ = false;
  std::size_t source_next_ = kNone;
  WorkBudget budget_;
};

}  // namespace

Result<ObjectsPlan> MinCostFlowWindowed(std::span<const UsageRecord> records,
                                        MinCostFlowWindow window, const PlanParams* params) {
  return WindowedSolver(records, window, params).Run();
}

Result<ObjectsPlan> MinCostFlowReference(std::span<const UsageRecord> records) {
  if (records.size() > kReferenceMaxRecords)
    return ResourceExhausted("min_cost_flow reference path is cubic; " +
                           std::to_string(records.size()) + " records exceed its limit of " +
                           std::to_string(kReferenceMaxRecords) + " (use the default path)");
  ReferenceSolver solver(records);
  solver.Solve();
  return solver.Assignment();
}

Result<ObjectsPlan> MinCostFlowObjects(std::span<const UsageRecord> records,
                                       const PlanParams& params) {
  if (params.reference || records.size() <= kExactMaxRecords) return MinCostFlowReference(records);
  return MinCostFlowWindowed(records, MinCostFlowWindow{}, &params);
}

}  // namespace tensormem::planning
