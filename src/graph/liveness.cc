// SPDX-License-Identifier: Apache-2.0
// Liveness by reference counting, as TensorFlow Lite's
// ArenaPlanner::PlanAllocations: every read of a tensor is one reference;
// graph inputs and outputs hold one more that is never released. Walking the
// nodes in order, a node allocates its outputs and temporaries, then drops
// one reference per input read; a tensor whose count reaches zero is freed
// after this node. In-place pairs are found first (IdentifyInPlaceTensors):
// a shared tensor's references count against the root of its chain, so the
// chain's buffer is freed after its last reader.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tensormem/graph.h"

namespace tensormem {
namespace {

std::size_t U(int t) { return static_cast<std::size_t>(t); }

// What the steps of ComputeLiveness share: the graph, per-tensor flags and
// counts, and the liveness being built.
struct LivenessState {
  const Graph& graph;
  const LivenessParams& params;
  bool preserve = false;  // preserve_all_tensors: nothing freed, nothing shared
  std::vector<char> is_input, is_output, written;
  std::vector<std::int64_t> refcount;      // reads, plus one for a graph input or output
  std::vector<TaskIndex> last_reader;      // -1: never read
  std::vector<std::int64_t> root_refcount; // references left on each in-place chain's root
  std::vector<TaskIndex> dealloc;          // the node after which a root is freed; -1: never
  Liveness live;
};

// Graph inputs and outputs, tensors some node writes, and the references.
void CountReferences(LivenessState& s) {
  const std::size_t n = s.graph.tensors.size();
  s.is_input.assign(n, 0);
  s.is_output.assign(n, 0);
  s.written.assign(n, 0);
  for (int t : s.graph.inputs)
    if (t != kNoTensor) s.is_input[U(t)] = 1;
  for (int t : s.graph.outputs)
    if (t != kNoTensor) s.is_output[U(t)] = 1;
  s.refcount.assign(n, 0);
  s.last_reader.assign(n, -1);
  for (std::size_t i = 0; i < s.graph.nodes.size(); ++i) {
    const GraphNode& node = s.graph.nodes[i];
    for (int t : node.outputs)
      if (t != kNoTensor) s.written[U(t)] = 1;
    for (int t : node.temporaries) s.written[U(t)] = 1;
    for (int t : node.inputs) {
      if (t == kNoTensor) continue;
      ++s.refcount[U(t)];
      s.last_reader[U(t)] = static_cast<TaskIndex>(i);
    }
  }
  for (std::size_t t = 0; t < n; ++t) s.refcount[t] += s.is_input[t] + s.is_output[t];
}

// Which arena, if any, each tensor's memory comes from.
void ChooseArenas(LivenessState& s) {
  for (std::size_t t = 0; t < s.graph.tensors.size(); ++t) {
    const GraphTensor& tensor = s.graph.tensors[t];
    TensorLiveness& l = s.live.tensors[t];
    if (tensor.kind == TensorKind::kDynamic) {
      l.unplanned_reason = "dynamic";
    } else if (tensor.bytes == 0) {
      l.unplanned_reason = "zero bytes";
    } else if (tensor.kind == TensorKind::kConstant || tensor.kind == TensorKind::kVariable) {
      l.arena = Arena::kPersistent;
      l.first_node = 0;
      l.last_node = s.live.last_node;
      l.never_freed = true;
      l.root = static_cast<int>(t);
    } else if (s.is_input[t] || s.written[t]) {
      l.arena = Arena::kScratch;
      l.root = static_cast<int>(t);
    } else {
      l.unplanned_reason = "never written";
    }
  }
}

// Whether node i's first output may take its first input's memory: both in
// the scratch arena, neither a graph input or output, i the input's last
// reader, and the output fits (kInput0: exactly the input's size).
bool SharesInPlace(const LivenessState& s, std::size_t i) {
  const GraphNode& node = s.graph.nodes[i];
  if (node.in_place == InPlace::kNone || node.inputs.empty() || node.outputs.empty()) return false;
  const int in = node.inputs[0], out = node.outputs[0];
  if (in == kNoTensor || out == kNoTensor || in == out) return false;
  const auto& lt = s.live.tensors;
  if (lt[U(in)].arena != Arena::kScratch || lt[U(out)].arena != Arena::kScratch) return false;
  if (s.is_input[U(in)] || s.is_output[U(in)] || s.is_output[U(out)]) return false;
  if (s.last_reader[U(in)] != static_cast<TaskIndex>(i)) return false;
  const std::uint64_t out_bytes = s.graph.tensors[U(out)].bytes;
  return node.in_place == InPlace::kInput0 ? out_bytes == s.graph.tensors[U(in)].bytes
                                           : out_bytes <= s.graph.tensors[U(lt[U(in)].root)].bytes;
}

// In-place sharing (before the walk, on the original reference counts); then
// each chain's references count against its root.
void ShareInPlace(LivenessState& s) {
  auto& lt = s.live.tensors;
  if (s.params.in_place && !s.preserve) {
    for (std::size_t i = 0; i < s.graph.nodes.size(); ++i) {
      if (!SharesInPlace(s, i)) continue;
      const GraphNode& node = s.graph.nodes[i];
      lt[U(node.outputs[0])].root = lt[U(node.inputs[0])].root;
      ++s.live.in_place_shared;
    }
  }
  s.root_refcount.assign(lt.size(), 0);
  for (std::size_t t = 0; t < lt.size(); ++t)
    if (lt[t].arena == Arena::kScratch) s.root_refcount[U(lt[t].root)] += s.refcount[t];
}

// The walk in node order: a node allocates its outputs and temporaries, then
// drops one reference per input read; a root whose count reaches zero is
// freed after this node.
void Walk(LivenessState& s) {
  auto& lt = s.live.tensors;
  s.dealloc.assign(lt.size(), -1);
  for (int t : s.graph.inputs)
    if (t != kNoTensor && lt[U(t)].arena == Arena::kScratch) lt[U(t)].first_node = 0;
  for (std::size_t i = 0; i < s.graph.nodes.size(); ++i) {
    const GraphNode& node = s.graph.nodes[i];
    const auto ti = static_cast<TaskIndex>(i);
    for (int t : node.outputs) {
      if (t == kNoTensor) continue;
      TensorLiveness& l = lt[U(t)];
      if (l.arena == Arena::kScratch && l.first_node < 0) l.first_node = ti;
    }
    for (int t : node.temporaries) {
      TensorLiveness& l = lt[U(t)];
      if (l.arena != Arena::kScratch) continue;
      l.first_node = ti;
      if (!s.preserve) s.dealloc[U(t)] = ti;
    }
    if (s.preserve) continue;
    for (int t : node.inputs) {
      if (t == kNoTensor || lt[U(t)].arena != Arena::kScratch) continue;
      const std::size_t root = U(lt[U(t)].root);
      if (--s.root_refcount[root] == 0) s.dealloc[root] = ti;
    }
  }
}

// Each root's last node from the walk; then every shared tensor takes its
// root's.
void SetLastNodes(LivenessState& s) {
  auto& lt = s.live.tensors;
  for (std::size_t t = 0; t < lt.size(); ++t) {
    TensorLiveness& l = lt[t];
    if (l.arena != Arena::kScratch || l.root != static_cast<int>(t)) continue;
    // Never read, no graph output: TFLite keeps it; by default it dies at its writer.
    if (s.dealloc[t] < 0 && !s.preserve && !s.params.keep_unread_tensors && s.root_refcount[t] == 0)
      s.dealloc[t] = l.first_node;
    l.never_freed = s.dealloc[t] < 0;
    l.last_node = l.never_freed ? s.live.last_node : s.dealloc[t];
  }
  for (std::size_t t = 0; t < lt.size(); ++t) {
    TensorLiveness& l = lt[t];
    if (l.arena != Arena::kScratch || l.root == static_cast<int>(t)) continue;
    const TensorLiveness& r = lt[U(l.root)];
    l.last_node = r.last_node;
    l.never_freed = r.never_freed;
  }
}

}  // namespace

Result<Liveness> ComputeLiveness(const Graph& graph, const LivenessParams& params) {
  TM_RETURN_IF_ERROR(CheckGraph(graph));
  LivenessState s{graph, params};
  s.preserve = params.preserve_all_tensors;
  s.live.tensors.resize(graph.tensors.size());
  s.live.last_node = graph.nodes.empty() ? 0 : static_cast<TaskIndex>(graph.nodes.size()) - 1;
  CountReferences(s);
  ChooseArenas(s);
  ShareInPlace(s);
  Walk(s);
  SetLastNodes(s);
  return std::move(s.live);
}

}  // namespace tensormem
