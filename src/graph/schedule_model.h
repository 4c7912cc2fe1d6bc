// SPDX-License-Identifier: Apache-2.0
// The scheduler's incremental view of the graph planner's liveness: what
// running one more node costs, given the set of nodes already run. It is
// ComputeLiveness's reference counting restated per step (a node allocates
// its outputs and temporaries, then every buffer whose last reader it is, and
// every unread output, is freed; graph inputs and outputs are never freed;
// an in-place node shares its first input's buffer when it is that input's
// last reader), so that the heuristics and the exact search can price a
// choice without replanning. The tests check it against ComputeLiveness on
// random graphs and orders; the scheduler reports peaks from ComputeLiveness.
//
// A state is a bit set: bit v (v < nodes) = node v has run; bit nodes + k =
// the k-th in-place-capable node ran and shared its input's buffer (the only
// history the live bytes depend on besides the set of nodes run).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tensormem/graph.h"
#include "tensormem/schedule.h"

namespace tensormem::internal {

class OrderModel {
 public:
  // Needs a graph that passes CheckGraph; `liveness` must not preserve all
  // tensors (nothing is then freed and every order has the same peak).
  OrderModel(const Graph& graph, const Liveness& live, const LivenessParams& params);

  struct Step {
    std::uint64_t during = 0;  // live bytes while the node runs
    std::uint64_t after = 0;   // live bytes once it has run
    bool shares = false;       // its first output takes its input's buffer
    // Running it now raises neither the peak so far nor the live bytes, and
    // changes no other node's in-place sharing: some best order from here
    // runs it next (the exact search's dominance rule).
    bool dominant = false;
  };

  int nodes() const { return static_cast<int>(node_.size()); }
  std::size_t words() const { return words_; }  // 64-bit words in a state
  std::uint64_t initial_live() const { return initial_live_; }
  // Nodes whose outputs `v` reads.
  const std::vector<int>& preds(int v) const { return node_[Index(v)].preds; }
  // Bytes node v needs whatever the order: a lower bound on every peak.
  std::uint64_t alone(int v) const { return node_[Index(v)].alone; }
  std::uint64_t out_bytes(int v) const { return node_[Index(v)].out_bytes; }
  // Whether v may write its output over its input (its in-place sharing is
  // part of the state).
  bool InPlaceCapable(int v) const { return node_[Index(v)].in_place_slot >= 0; }

  static bool Has(const std::uint64_t* state, int bit) {
    return (state[static_cast<unsigned>(bit) >> 6] >> (static_cast<unsigned>(bit) & 63)) & 1;
  }
  bool Ready(const std::uint64_t* state, int v) const;
  // Running v now, with `live` bytes live and a peak of `peak` so far.
  Step Run(const std::uint64_t* state, std::uint64_t live, std::uint64_t peak, int v) const;
  // Marks v run (and its sharing) in `state`.
  void Apply(std::uint64_t* state, int v, bool shares) const;

  // The peak of a whole order (checked elsewhere to be topological).
  std::uint64_t Peak(const std::vector<int>& order) const;

  // A lower bound on every order's peak: the most bytes surely live at a
  // node. A tensor is held at v when v or a descendant of v reads it (it
  // is freed after v) or it is never freed; held tensors an ancestor of v
  // writes are live at v in every order, with what v needs alone. Hubs
  // with far consumers make it much stronger than the largest alone().
  std::uint64_t CoLiveBound() const;

  // The nodes cut at the graph's chokepoints: a node every other node is
  // an ancestor or a descendant of (a RandWire stage's output, a residual
  // block's add), unless an in-place chain crosses it. Every order runs
  // the segments one after the other and has the same live bytes at each
  // cut, so its peak is the largest of its segments' peaks, and each
  // segment can be ordered on its own. Segments in execution order, each
  // ending with its chokepoint (the last with the last node), each a
  // topological order of its nodes. Linear in the graph's size.
  // Nodes with no predecessor join their first reader's segment. Branches
  // that compute on constants only join their first reader's segment, and
  // dead-end branches (nothing reads their results) the last segment of
  // their inputs, when `floor` (a bound every order's peak reaches) shows
  // that moving them there never raises the peak.
  std::vector<std::vector<int>> Segments(std::uint64_t floor = 0) const;

 private:
  // What the constructor's steps read per tensor.
  struct Tensors {
    std::vector<char> scratch;   // lives in the scratch arena
    std::vector<char> is_input;  // a graph input
  };
  Tensors ReadTensors(const Graph& graph, const Liveness& live);
  void RecordWriters(const Graph& graph, const Tensors& t);
  void RecordReads(const Graph& graph, const Tensors& t, std::size_t i);
  void MarkInPlace(const Graph& graph, const Tensors& t, const LivenessParams& params, std::size_t i, int& slots);
  std::uint64_t AloneBytes(const Graph& graph, const Tensors& t, std::size_t i) const;

  struct Node {
    std::vector<int> inputs;   // distinct scratch tensors read
    std::vector<int> outputs;  // scratch tensors written
    std::vector<int> preds;    // distinct nodes writing what it reads
    std::uint64_t temp_bytes = 0;
    std::uint64_t out_bytes = 0;
    std::uint64_t alone = 0;
    int in_place_slot = -1;  // k when it may share its input in place
    bool reads_input = false;  // a graph input
    InPlace in_place = InPlace::kNone;
  };
  static std::size_t Index(int i) { return static_cast<std::size_t>(i); }
  bool PendingReader(const std::uint64_t* state, int t, int except) const;
  int Root(const std::uint64_t* state, int t) const;
  bool Shares(const std::uint64_t* state, int v) const;
  // t is one of v's scratch outputs (the tensors the model tracks).
  bool IsScratchOutput(int v, int t) const;
  bool MayShare(int v, int t) const;
  std::vector<int> TopologicalOrder() const;  // Kahn's
  std::vector<std::vector<std::uint64_t>> Ancestors() const;
  bool Floating(int v, const std::vector<char>& has_succ) const;
  bool Unshared(int v) const;
  std::vector<int> Branches(const std::vector<int>& topo, const std::vector<char>& floating,
                            std::vector<char>& derived) const;
  void PlaceBranches(const std::vector<int>& branch, const std::vector<char>& derived, const std::vector<char>& core,
                     int count, std::vector<int>& segment) const;
  std::pair<std::vector<int>, int> CutCore(const std::vector<int>& topo, const std::vector<char>& core) const;
  std::vector<std::uint64_t> CutLive(const std::vector<int>& segment, int count) const;
  bool KeepBranchesOut(const std::vector<int>& segment, int count, std::uint64_t floor,
                       const std::vector<char>& derived, std::vector<int>& branch, std::vector<char>& core) const;
  std::vector<std::vector<int>> Gather(const std::vector<int>& topo, const std::vector<int>& segment, int count) const;
  std::vector<char> CrossedPositions(const std::vector<int>& core, const std::vector<int>& position) const;

  std::vector<Node> node_;
  std::vector<std::uint64_t> bytes_;        // per tensor
  std::vector<char> pinned_;                // graph input or output
  std::vector<int> writer_;                 // per tensor, -1 = none
  std::vector<std::vector<int>> readers_;   // distinct reader nodes per tensor
  std::vector<std::vector<int>> readers_in_place_;  // readers that may share it
  std::uint64_t initial_live_ = 0;
  bool keep_unread_ = false;
  std::size_t words_ = 0;
};

// The heuristic orders, by name ("list", "dfs", "post-order", "lpmf", "bfs").
struct NamedOrder {
  const char* method;
  std::vector<int> order;
};
std::vector<NamedOrder> HeuristicOrders(const OrderModel& model);

struct ExactResult {
  std::vector<int> order;        // the best found (empty for a graph of no nodes)
  std::uint64_t peak = 0;        // of `order`
  std::uint64_t lower_bound = 0;
  bool complete = false;         // the bound is the optimum: `order` is optimal
  std::size_t states = 0;
  // Each segment's best order after the beam, before the exact passes: an
  // order of a low peak that may pack into a smaller arena (a kJoint
  // candidate).
  std::vector<int> beam_order;
};
// The search for a minimum-peak order, segment by segment (Segments), from
// the best piece of the `starts` orders in each (the heuristics': the best
// of them is never beaten by what it returns), under params' limits (its
// order field is not read); `lower_bound` is a bound already proved.
// `meet_width`: the states a side of the two-sided search keeps per level
// before it goes on depth first (a parameter for the tests).
inline constexpr std::size_t kMeetWidth = std::size_t{1} << 14;
ExactResult ExactOrder(const OrderModel& model, const std::vector<std::vector<int>>& starts,
                       std::uint64_t lower_bound, const ScheduleParams& params, std::size_t meet_width = kMeetWidth);

}  // namespace tensormem::internal
