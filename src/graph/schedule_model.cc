// SPDX-License-Identifier: Apache-2.0
// The scheduler's per-step liveness (see schedule_model.h).
#include "graph/schedule_model.h"

#include <algorithm>

#include "core/topological_order.h"

namespace tensormem::internal {
namespace {

void AddUnique(std::vector<int>& v, int x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

OrderModel::OrderModel(const Graph& graph, const Liveness& live, const LivenessParams& params)
    : keep_unread_(params.keep_unread_tensors) {
  const Tensors t = ReadTensors(graph, live);
  node_.resize(graph.nodes.size());
  RecordWriters(graph, t);
  int slots = 0;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    RecordReads(graph, t, i);
    MarkInPlace(graph, t, params, i, slots);
    node_[i].alone = AloneBytes(graph, t, i);
  }
  words_ = (node_.size() + static_cast<std::size_t>(slots) + 63) / 64;
  if (words_ == 0) words_ = 1;
}

// Per tensor: bytes, pinned (a graph input or output), whether it lives in
// the scratch arena; and the scratch bytes of the graph inputs, live from
// the start.
OrderModel::Tensors OrderModel::ReadTensors(const Graph& graph, const Liveness& live) {
  const std::size_t n = graph.tensors.size();
  Tensors t{std::vector<char>(n, 0), std::vector<char>(n, 0)};
  bytes_.resize(n);
  pinned_.assign(n, 0);
  writer_.assign(n, -1);
  readers_.resize(n);
  readers_in_place_.resize(n);
  for (std::size_t u = 0; u < n; ++u) {
    bytes_[u] = graph.tensors[u].bytes;
    t.scratch[u] = live.tensors[u].arena == Arena::kScratch;
  }
  for (int u : graph.inputs)
    if (u != kNoTensor) pinned_[Index(u)] = t.is_input[Index(u)] = 1;
  for (int u : graph.outputs)
    if (u != kNoTensor) pinned_[Index(u)] = 1;
  std::vector<char> counted(n, 0);
  for (int u : graph.inputs)
    if (u != kNoTensor && t.scratch[Index(u)] && !counted[Index(u)]) {
      counted[Index(u)] = 1;
      initial_live_ += bytes_[Index(u)];
    }
  return t;
}

// Each tensor's writer; each node's scratch outputs and temporary bytes.
void OrderModel::RecordWriters(const Graph& graph, const Tensors& t) {
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& g = graph.nodes[i];
    Node& node = node_[i];
    for (int u : g.outputs)
      if (u != kNoTensor) {
        writer_[Index(u)] = static_cast<int>(i);
        if (t.scratch[Index(u)]) AddUnique(node.outputs, u);
      }
    for (int u : g.temporaries)
      if (t.scratch[Index(u)]) node.temp_bytes += bytes_[Index(u)];
    for (int o : node.outputs) node.out_bytes += bytes_[Index(o)];
  }
}

// Node i's predecessors and scratch inputs, and it as their reader.
void OrderModel::RecordReads(const Graph& graph, const Tensors& t, std::size_t i) {
  Node& node = node_[i];
  for (int u : graph.nodes[i].inputs) {
    if (u == kNoTensor) continue;
    if (t.is_input[Index(u)]) node.reads_input = true;
    if (writer_[Index(u)] >= 0) AddUnique(node.preds, writer_[Index(u)]);
    if (!t.scratch[Index(u)]) continue;
    AddUnique(node.inputs, u);
    AddUnique(readers_[Index(u)], static_cast<int>(i));
  }
}

// ComputeLiveness's static conditions for sharing in place; the dynamic
// ones (last reader, the chain root's size) are checked per step. A node
// that may share gets the next in-place slot of the state.
void OrderModel::MarkInPlace(const Graph& graph, const Tensors& t, const LivenessParams& params, std::size_t i,
                             int& slots) {
  const GraphNode& g = graph.nodes[i];
  Node& node = node_[i];
  node.in_place = g.in_place;
  if (!params.in_place || g.in_place == InPlace::kNone || g.inputs.empty() || g.outputs.empty()) return;
  const int in = g.inputs[0], out = g.outputs[0];
  if (in == kNoTensor || out == kNoTensor || in == out) return;
  if (!t.scratch[Index(in)] || !t.scratch[Index(out)] || pinned_[Index(in)] || pinned_[Index(out)]) return;
  if (g.in_place != InPlace::kInput0Unmodified && bytes_[Index(in)] != bytes_[Index(out)]) return;
  node.in_place_slot = slots++;
  readers_in_place_[Index(in)].push_back(static_cast<int>(i));
}

// Alone: node i's inputs, outputs and temporaries, and the graph inputs,
// all live while it runs (less the output it may write in place).
std::uint64_t OrderModel::AloneBytes(const Graph& graph, const Tensors& t, std::size_t i) const {
  const Node& node = node_[i];
  std::uint64_t alone = initial_live_ + node.temp_bytes + node.out_bytes;
  for (int u : node.inputs)
    if (!t.is_input[Index(u)]) alone += bytes_[Index(u)];
  if (node.in_place_slot >= 0) alone -= bytes_[Index(graph.nodes[i].outputs[0])];
  return alone;
}

bool OrderModel::Ready(const std::uint64_t* state, int v) const {
  if (Has(state, v)) return false;
  for (int p : node_[Index(v)].preds)
    if (!Has(state, p)) return false;
  return true;
}

bool OrderModel::PendingReader(const std::uint64_t* state, int t, int except) const {
  for (int r : readers_[Index(t)])
    if (r != except && !Has(state, r)) return true;
  return false;
}

// The tensor owning t's buffer: back along the in-place nodes that shared.
int OrderModel::Root(const std::uint64_t* state, int t) const {
  for (;;) {
    const int w = writer_[Index(t)];
    if (w < 0) return t;
    const Node& node = node_[Index(w)];
    if (node.in_place_slot < 0 || node.outputs.empty() || node.outputs[0] != t ||
        !Has(state, nodes() + node.in_place_slot))
      return t;
    t = node.inputs[0];
  }
}

bool OrderModel::Shares(const std::uint64_t* state, int v) const {
  const Node& node = node_[Index(v)];
  if (node.in_place_slot < 0) return false;
  const int in = node.inputs[0], out = node.outputs[0];
  if (PendingReader(state, in, v)) return false;
  return node.in_place == InPlace::kInput0 || bytes_[Index(out)] <= bytes_[Index(Root(state, in))];
}

OrderModel::Step OrderModel::Run(const std::uint64_t* state, std::uint64_t live,
                                 std::uint64_t peak, int v) const {
  const Node& node = node_[Index(v)];
  Step s;
  s.shares = Shares(state, v);
  std::uint64_t alloc = node.temp_bytes, freed = node.temp_bytes, kept = 0;
  for (std::size_t k = 0; k < node.outputs.size(); ++k) {
    const int o = node.outputs[k];
    if (k == 0 && s.shares) continue;
    alloc += bytes_[Index(o)];
    if (readers_[Index(o)].empty() && !pinned_[Index(o)] && !keep_unread_)
      freed += bytes_[Index(o)];
    else
      kept += bytes_[Index(o)];
  }
  bool hazard = node.in_place_slot >= 0 && !s.shares;
  std::uint64_t released = 0;
  for (int t : node.inputs) {
    if (s.shares && t == node.inputs[0]) {
      const int out = node.outputs[0];
      if (readers_[Index(out)].empty()) released += bytes_[Index(Root(state, t))];
      continue;
    }
    if (pinned_[Index(t)] || PendingReader(state, t, v)) {
      // Running v now may make another reader the last one, which may then
      // share t in place: a change the dominance rule does not cover.
      for (int w : readers_in_place_[Index(t)]) hazard |= w != v && !Has(state, w);
      continue;
    }
    released += bytes_[Index(Root(state, t))];
  }
  s.during = live + alloc;
  s.after = s.during - freed - released;
  // Running v now never raises the peak and leaves no more bytes live, and
  // its effect on later steps is only that (its reads being the last ones):
  // some best order from here runs it next.
  s.dominant = !hazard && s.during <= peak && kept <= released;
  return s;
}

void OrderModel::Apply(std::uint64_t* state, int v, bool shares) const {
  auto set = [&](int bit) { state[static_cast<unsigned>(bit) >> 6] |= std::uint64_t{1} << (bit & 63); };
  set(v);
  if (shares) set(nodes() + node_[Index(v)].in_place_slot);
}

std::uint64_t OrderModel::Peak(const std::vector<int>& order) const {
  std::vector<std::uint64_t> state(words_, 0);
  std::uint64_t live = initial_live_, peak = initial_live_;
  for (int v : order) {
    const Step s = Run(state.data(), live, peak, v);
    peak = std::max(peak, s.during);
    live = s.after;
    Apply(state.data(), v, s.shares);
  }
  return peak;
}

namespace {

using Bits = std::vector<std::uint64_t>;

bool Test(const Bits& b, int i) { return (b[static_cast<unsigned>(i) >> 6] >> (static_cast<unsigned>(i) & 63)) & 1; }

}  // namespace

std::vector<int> OrderModel::TopologicalOrder() const {
  std::vector<std::vector<int>> succs(Index(nodes()));
  for (int v = 0; v < nodes(); ++v)
    for (int p : preds(v)) succs[Index(p)].push_back(v);
  return internal::TopologicalOrder<int>(succs);
}

// Ancestors of each node as bit sets, in a topological order.
std::vector<std::vector<std::uint64_t>> OrderModel::Ancestors() const {
  const int n = nodes();
  const std::size_t w = (static_cast<std::size_t>(n) + 63) / 64;
  const std::vector<int> topo = TopologicalOrder();
  std::vector<Bits> anc(Index(n), Bits(w, 0));
  for (int v : topo)
    for (int p : preds(v)) {
      for (std::size_t i = 0; i < w; ++i) anc[Index(v)][i] |= anc[Index(p)][i];
      anc[Index(v)][static_cast<unsigned>(p) >> 6] |= std::uint64_t{1} << (static_cast<unsigned>(p) & 63);
    }
  return anc;
}

// The co-live bound takes nodes x tensors steps and a bit set of ancestors
// per node (nodes^2 / 8 bytes): past this many steps (a fraction of a
// second) each node's bound is what it needs alone, weaker but still a
// lower bound, so that a graph of a million nodes is not held up by it.
constexpr double kCoLiveSteps = 5e7;

std::uint64_t OrderModel::CoLiveBound() const {
  const int n = nodes();
  std::uint64_t bound = initial_live_;
  for (int v = 0; v < n; ++v) bound = std::max(bound, alone(v));
  if (static_cast<double>(n) * static_cast<double>(bytes_.size()) > kCoLiveSteps) return bound;
  const std::vector<Bits> anc = Ancestors();
  for (int v = 0; v < n; ++v) {
    std::uint64_t live = alone(v);  // its inputs, outputs, temporaries, the graph inputs
    const std::vector<int>& own = node_[Index(v)].inputs;
    for (std::size_t t = 0; t < bytes_.size(); ++t) {
      const int writer = writer_[t];
      if (writer < 0 || writer == v || !IsScratchOutput(writer, static_cast<int>(t))) continue;
      if (std::find(own.begin(), own.end(), static_cast<int>(t)) != own.end()) continue;
      if (!Test(anc[Index(v)], writer)) continue;  // not surely written before v
      const std::vector<int>& readers = readers_[t];
      bool held = pinned_[t] || (keep_unread_ && readers.empty() && !MayShare(writer, static_cast<int>(t)));
      for (std::size_t k = 0; k < readers.size() && !held; ++k) held = Test(anc[Index(readers[k])], v);
      if (held) live += bytes_[t];
    }
    bound = std::max(bound, live);
  }
  return bound;
}

// An unread output written in place frees its chain's buffer at once,
// even when unread tensors are kept.
bool OrderModel::MayShare(int v, int t) const {
  const Node& node = node_[Index(v)];
  return node.in_place_slot >= 0 && node.outputs[0] == t;
}

// A source node (no predecessor) that frees nothing at once and needs no
// temporaries: in some best order it runs right before its first reader,
// where its step costs no more than the reader's (it is not a chokepoint's
// obstacle: it joins its first reader's segment).
bool OrderModel::Floating(int v, const std::vector<char>& has_succ) const {
  const Node& node = node_[Index(v)];
  if (!preds(v).empty() || !has_succ[Index(v)] || node.temp_bytes > 0) return false;
  for (int t : node.outputs)
    if (readers_[Index(t)].empty() && !pinned_[Index(t)] && !keep_unread_) return false;
  return true;
}

// Per node of `core` (a topological order of the nodes not floating, at
// `position`): 1 when it is no chokepoint or an in-place chain crosses it.
// With no edge jumping over a position, no sink before it and no source
// after it, every node before it reaches it and every node after it is
// reached from it.
std::vector<char> OrderModel::CrossedPositions(const std::vector<int>& core, const std::vector<int>& position) const {
  const int n = static_cast<int>(core.size());
  std::vector<int> cover(Index(n) + 1, 0);
  auto cross = [&](int from, int to) {  // positions strictly between
    if (from + 1 >= to) return;
    ++cover[Index(from + 1)];
    --cover[Index(to)];
  };
  std::vector<char> has_succ(Index(nodes()), 0), has_pred(Index(nodes()), 0);
  for (int v : core)
    for (int p : preds(v))
      if (position[Index(p)] >= 0) {
        has_succ[Index(p)] = has_pred[Index(v)] = 1;
        cross(position[Index(p)], position[Index(v)]);
      }
  int first_sink = n, last_source = -1;
  for (int v : core) {
    if (!has_succ[Index(v)]) first_sink = std::min(first_sink, position[Index(v)]);
    if (!has_pred[Index(v)]) last_source = std::max(last_source, position[Index(v)]);
  }
  // An in-place output read after a cut: the buffers live there, and so
  // the later nodes' costs, would depend on the order before it.
  for (int v : core) {
    const Node& node = node_[Index(v)];
    if (node.in_place_slot < 0) continue;
    const int out = node.outputs[0];
    int last = position[Index(v)];
    for (int r : readers_[Index(out)]) last = std::max(last, position[Index(r)]);
    if (readers_[Index(out)].empty() && keep_unread_) last = n;
    cross(position[Index(v)] - 1, last);  // cuts at v up to before its last reader
  }
  std::vector<char> crossed(Index(n), 0);
  for (int i = 0, c = 0; i < n; ++i) {
    c += cover[Index(i)];
    crossed[Index(i)] = c > 0 || i > first_sink || i < last_source;
  }
  return crossed;
}

// No in-place sharing around v that depends on the order: then moving it
// changes no buffer's size. (It may write in place over an input only it
// reads: then it always does.)
bool OrderModel::Unshared(int v) const {
  const Node& node = node_[Index(v)];
  for (int t : node.outputs)
    if (pinned_[Index(t)] || (keep_unread_ && readers_[Index(t)].empty())) return false;
  for (int t : node.inputs) {
    // Up an in-place chain: each link the only reader of what it writes over.
    for (int u = t, w = writer_[Index(u)]; w >= 0 && MayShare(w, u); u = node_[Index(w)].inputs[0], w = writer_[Index(u)])
      if (readers_[Index(node_[Index(w)].inputs[0])].size() > 1) return false;
    for (int r : readers_in_place_[Index(t)])
      if (r != v || readers_[Index(t)].size() > 1) return false;
  }
  return true;
}

// Branches: connected sets of nodes that move as one (see Segments), each
// labelled with its smallest node, -1 for the other nodes; `derived[b]`:
// branch b reads only sources that read no graph input (a computation on
// constants, such as a position table or a mask), otherwise nothing reads
// its results (a dead end, such as an unused shape computation).
std::vector<int> OrderModel::Branches(const std::vector<int>& topo, const std::vector<char>& floating,
                                      std::vector<char>& derived) const {
  const int n = nodes();
  std::vector<std::vector<int>> succs(Index(n));
  for (int v = 0; v < n; ++v)
    for (int p : preds(v)) succs[Index(p)].push_back(v);
  std::vector<char> dangling(Index(n), 0);
  derived.assign(Index(n), 0);
  // Derived: its predecessors derived, or floating nodes that read no graph
  // input and only derived nodes read from (moving the branch later must
  // not keep another reader's input live longer).
  for (int v : topo) derived[Index(v)] = !floating[Index(v)] && !preds(v).empty() && Unshared(v);
  for (bool changed = true; changed;) {
    changed = false;
    for (int v : topo) {
      if (!derived[Index(v)]) continue;
      for (int p : preds(v)) {
        bool ok = derived[Index(p)] || (floating[Index(p)] && !node_[Index(p)].reads_input);
        for (int r : succs[Index(p)]) ok &= derived[Index(p)] || derived[Index(r)];
        if (!ok) derived[Index(v)] = 0, changed = true;
      }
    }
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const int v = *it;
    bool d = !floating[Index(v)] && !derived[Index(v)] && !preds(v).empty() && Unshared(v);
    for (int s : succs[Index(v)]) d &= dangling[Index(s)] != 0;
    // A floating or derived node's segment is its first reader's: not one
    // of a dead end, which would draw it earlier.
    for (int p : preds(v)) d &= !derived[Index(p)] && !floating[Index(p)];
    dangling[Index(v)] = d;
  }
  std::vector<int> branch(Index(n), -1);
  auto find = [&](int v) {
    while (branch[Index(v)] != v) v = branch[Index(v)] = branch[Index(branch[Index(v)])];
    return v;
  };
  for (int v = 0; v < n; ++v)
    if (dangling[Index(v)] || derived[Index(v)]) branch[Index(v)] = v;
  for (int v = 0; v < n; ++v)
    for (int p : preds(v))
      if ((dangling[Index(v)] && dangling[Index(p)]) || (derived[Index(v)] && derived[Index(p)])) {
        const int a = find(v), b = find(p);
        branch[Index(std::max(a, b))] = std::min(a, b);
      }
  for (int v = 0; v < n; ++v)
    if (branch[Index(v)] >= 0) branch[Index(v)] = find(v);
  return branch;
}

// Each core node's segment (-1 for the others) and the number of segments.
std::pair<std::vector<int>, int> OrderModel::CutCore(const std::vector<int>& topo, const std::vector<char>& core) const {
  std::vector<int> order, position(Index(nodes()), -1), segment(Index(nodes()), -1);
  for (int v : topo)
    if (core[Index(v)]) {
      position[Index(v)] = static_cast<int>(order.size());
      order.push_back(v);
    }
  const std::vector<char> crossed = CrossedPositions(order, position);
  int count = 1;
  for (std::size_t i = 0; i < order.size(); ++i) {
    segment[Index(order[i])] = count - 1;
    if (!crossed[i] && i + 1 < order.size()) ++count;
  }
  return {segment, count};
}

// The bytes live after each segment (`segment` per node), each tensor
// counted whole (a buffer shared in place twice: more, never less).
std::vector<std::uint64_t> OrderModel::CutLive(const std::vector<int>& segment, int count) const {
  std::vector<std::int64_t> delta(Index(count) + 1, 0);
  for (std::size_t t = 0; t < bytes_.size(); ++t) {
    const int w = writer_[t];
    if (w < 0 || !IsScratchOutput(w, static_cast<int>(t))) continue;
    int last = segment[Index(w)];
    for (int r : readers_[t]) last = std::max(last, segment[Index(r)]);
    if (pinned_[t] || (keep_unread_ && readers_[t].empty())) last = count;
    delta[Index(segment[Index(w)])] += static_cast<std::int64_t>(bytes_[t]);
    delta[Index(last)] -= static_cast<std::int64_t>(bytes_[t]);
  }
  std::vector<std::uint64_t> live(Index(count));
  std::int64_t now = static_cast<std::int64_t>(initial_live_);
  for (int k = 0; k < count; ++k) live[Index(k)] = static_cast<std::uint64_t>(now += delta[Index(k)]);
  return live;
}

std::vector<std::vector<int>> OrderModel::Segments(std::uint64_t floor) const {
  const int n = nodes();
  std::vector<char> has_succ(Index(n), 0), floating(Index(n), 0), core(Index(n), 0), derived;
  for (int v = 0; v < n; ++v)
    for (int p : preds(v)) has_succ[Index(p)] = 1;
  for (int v = 0; v < n; ++v) floating[Index(v)] = Floating(v, has_succ);
  const std::vector<int> topo = TopologicalOrder();
  std::vector<int> branch = Branches(topo, floating, derived);
  for (int v = 0; v < n; ++v) core[Index(v)] = !floating[Index(v)] && branch[Index(v)] < 0;
  for (;;) {
    auto [segment, count] = CutCore(topo, core);
    PlaceBranches(branch, derived, core, count, segment);
    // A floating node in its first reader's segment.
    for (int v = 0; v < n; ++v)
      for (int p : preds(v))
        if (floating[Index(p)] && (segment[Index(p)] < 0 || segment[Index(v)] < segment[Index(p)]))
          segment[Index(p)] = segment[Index(v)];
    if (!KeepBranchesOut(segment, count, floor, derived, branch, core)) return Gather(topo, segment, count);
  }
}

// A dead-end branch in the last segment of its inputs, a derived one in its
// first reader's (the last segment when none).
void OrderModel::PlaceBranches(const std::vector<int>& branch, const std::vector<char>& derived,
                               const std::vector<char>& core, int count, std::vector<int>& segment) const {
  const int n = nodes();
  std::vector<int> at(Index(n), -1);
  for (int v = 0; v < n; ++v)
    for (int p : preds(v)) {
      if (branch[Index(v)] >= 0 && !derived[Index(v)] && core[Index(p)])
        at[Index(branch[Index(v)])] = std::max(at[Index(branch[Index(v)])], segment[Index(p)]);
      if (branch[Index(p)] >= 0 && derived[Index(p)] && core[Index(v)]) {
        int& a = at[Index(branch[Index(p)])];
        a = a < 0 ? segment[Index(v)] : std::min(a, segment[Index(v)]);
      }
    }
  for (int v = 0; v < n; ++v)
    if (branch[Index(v)] >= 0) {
      const int a = at[Index(branch[Index(v)])];
      segment[Index(v)] = a >= 0 ? a : derived[Index(v)] ? count - 1 : 0;
    }
}

// Moves back into the core each branch whose run at the edge of its
// segment (after a dead end's, before a derived one's: the bytes live
// there, what it reads, all it writes) could be over `floor`, a bound every
// order reaches: only then does moving it there never raise the peak.
// True when one moved.
bool OrderModel::KeepBranchesOut(const std::vector<int>& segment, int count, std::uint64_t floor,
                                 const std::vector<char>& derived, std::vector<int>& branch,
                                 std::vector<char>& core) const {
  const std::vector<std::uint64_t> live = CutLive(segment, count);
  std::vector<std::uint64_t> cost(Index(nodes()), 0);
  for (int v = 0; v < nodes(); ++v) {
    if (branch[Index(v)] < 0) continue;
    std::uint64_t& c = cost[Index(branch[Index(v)])];
    c += node_[Index(v)].temp_bytes + node_[Index(v)].out_bytes;
    for (int t : node_[Index(v)].inputs) {
      const int w = writer_[Index(t)];
      if (w >= 0 && branch[Index(w)] != branch[Index(v)]) c += bytes_[Index(t)];
    }
  }
  bool moved = false;
  for (int v = 0; v < nodes(); ++v) {
    const int b = branch[Index(v)], k = segment[Index(v)];
    if (b < 0) continue;
    const bool free = derived[Index(v)] ? k == 0 : k + 1 >= count;  // where it may run anyway
    const std::uint64_t before = derived[Index(v)] ? (k > 0 ? live[Index(k - 1)] : 0) : live[Index(k)];
    if (free || before + cost[Index(b)] <= floor) continue;
    branch[Index(v)] = -1, core[Index(v)] = 1, moved = true;
  }
  return moved;
}

// The nodes by segment, each segment in topological order.
std::vector<std::vector<int>> OrderModel::Gather(const std::vector<int>& topo, const std::vector<int>& segment,
                                                 int count) const {
  std::vector<std::vector<int>> segments(Index(count));
  for (int v : topo) segments[Index(segment[Index(v)])].push_back(v);
  std::erase_if(segments, [](const std::vector<int>& s) { return s.empty(); });
  return segments;
}

bool OrderModel::IsScratchOutput(int v, int t) const {
  const std::vector<int>& out = node_[Index(v)].outputs;
  return std::find(out.begin(), out.end(), t) != out.end();
}

}  // namespace tensormem::internal
