// SPDX-License-Identifier: Apache-2.0
// Liveness by reference counting, as TensorFlow Lite's
// ArenaPlanner::PlanAllocations: every read of a tensor is one reference;
// graph inputs and outputs hold one more that is never released. Walking the
// nodes in order, a node allocates its outputs and temporaries, then drops
// one reference per input read; a tensor whose count reaches zero is freed
// after this node. In-place pairs are found first (IdentifyInPlaceTensors):
// a shared tensor's references count against the root of its chain, so the
// chain's buffer is freed after its last reader.
#include <algorithm>

#include "tensormem/graph.h"

namespace tensormem {

Result<Liveness> ComputeLiveness(const Graph& graph, const LivenessParams& params) {
  TM_RETURN_IF_ERROR(CheckGraph(graph));
  const std::size_t n = graph.tensors.size();
  const std::size_t num_nodes = graph.nodes.size();
  Liveness live;
  live.tensors.resize(n);
  live.last_node = num_nodes ? static_cast<TaskIndex>(num_nodes) - 1 : 0;
  auto& lt = live.tensors;

  std::vector<char> is_input(n, 0), is_output(n, 0), written(n, 0);
  for (int t : graph.inputs)
    if (t != kNoTensor) is_input[static_cast<std::size_t>(t)] = 1;
  for (int t : graph.outputs)
    if (t != kNoTensor) is_output[static_cast<std::size_t>(t)] = 1;
  std::vector<std::int64_t> refcount(n, 0);
  std::vector<TaskIndex> last_reader(n, -1);
  for (std::size_t i = 0; i < num_nodes; ++i) {
    const GraphNode& node = graph.nodes[i];
    for (int t : node.outputs)
      if (t != kNoTensor) written[static_cast<std::size_t>(t)] = 1;
    for (int t : node.temporaries) written[static_cast<std::size_t>(t)] = 1;
    for (int t : node.inputs) {
      if (t == kNoTensor) continue;
      ++refcount[static_cast<std::size_t>(t)];
      last_reader[static_cast<std::size_t>(t)] = static_cast<TaskIndex>(i);
    }
  }
  for (std::size_t t = 0; t < n; ++t) refcount[t] += is_input[t] + is_output[t];

  // Which arena, if any.
  for (std::size_t t = 0; t < n; ++t) {
    const GraphTensor& tensor = graph.tensors[t];
    TensorLiveness& l = lt[t];
    if (tensor.kind == TensorKind::kDynamic) {
      l.unplanned_reason = "dynamic";
    } else if (tensor.bytes == 0) {
      l.unplanned_reason = "zero bytes";
    } else if (tensor.kind == TensorKind::kConstant || tensor.kind == TensorKind::kVariable) {
      l.arena = Arena::kPersistent;
      l.first_node = 0;
      l.last_node = live.last_node;
      l.never_freed = true;
      l.root = static_cast<int>(t);
    } else if (is_input[t] || written[t]) {
      l.arena = Arena::kScratch;
      l.root = static_cast<int>(t);
    } else {
      l.unplanned_reason = "never written";
    }
  }

  // In-place sharing (before the walk, on the original reference counts).
  const bool preserve = params.preserve_all_tensors;
  if (params.in_place && !preserve) {
    for (std::size_t i = 0; i < num_nodes; ++i) {
      const GraphNode& node = graph.nodes[i];
      if (node.in_place == InPlace::kNone || node.inputs.empty() || node.outputs.empty()) continue;
      const int in = node.inputs[0], out = node.outputs[0];
      if (in == kNoTensor || out == kNoTensor || in == out) continue;
      const auto ui = static_cast<std::size_t>(in), uo = static_cast<std::size_t>(out);
      if (lt[ui].arena != Arena::kScratch || lt[uo].arena != Arena::kScratch) continue;
      if (is_input[ui] || is_output[ui] || is_output[uo]) continue;
      if (last_reader[ui] != static_cast<TaskIndex>(i)) continue;
      const auto root = static_cast<std::size_t>(lt[ui].root);
      const std::uint64_t out_bytes = graph.tensors[uo].bytes;
      if (node.in_place == InPlace::kInput0 ? out_bytes != graph.tensors[ui].bytes
                                            : out_bytes > graph.tensors[root].bytes)
        continue;
      lt[uo].root = static_cast<int>(root);
      ++live.in_place_shared;
    }
  }
  std::vector<std::int64_t> root_refcount(n, 0);
  for (std::size_t t = 0; t < n; ++t)
    if (lt[t].arena == Arena::kScratch) root_refcount[static_cast<std::size_t>(lt[t].root)] += refcount[t];

  // The walk.
  std::vector<TaskIndex> dealloc(n, -1);
  for (int t : graph.inputs)
    if (t != kNoTensor && lt[static_cast<std::size_t>(t)].arena == Arena::kScratch)
      lt[static_cast<std::size_t>(t)].first_node = 0;
  for (std::size_t i = 0; i < num_nodes; ++i) {
    const GraphNode& node = graph.nodes[i];
    const auto ti = static_cast<TaskIndex>(i);
    for (int t : node.outputs) {
      if (t == kNoTensor) continue;
      TensorLiveness& l = lt[static_cast<std::size_t>(t)];
      if (l.arena == Arena::kScratch && l.first_node < 0) l.first_node = ti;
    }
    for (int t : node.temporaries) {
      TensorLiveness& l = lt[static_cast<std::size_t>(t)];
      if (l.arena != Arena::kScratch) continue;
      l.first_node = ti;
      if (!preserve) dealloc[static_cast<std::size_t>(t)] = ti;
    }
    if (preserve) continue;
    for (int t : node.inputs) {
      if (t == kNoTensor || lt[static_cast<std::size_t>(t)].arena != Arena::kScratch) continue;
      const auto root = static_cast<std::size_t>(lt[static_cast<std::size_t>(t)].root);
      if (--root_refcount[root] == 0) dealloc[root] = ti;
    }
  }
  for (std::size_t t = 0; t < n; ++t) {
    TensorLiveness& l = lt[t];
    if (l.arena != Arena::kScratch || l.root != static_cast<int>(t)) continue;
    // Never read, no graph output: TFLite keeps it; by default it dies at its writer.
    if (dealloc[t] < 0 && !preserve && !params.keep_unread_tensors && root_refcount[t] == 0)
      dealloc[t] = l.first_node;
    l.never_freed = dealloc[t] < 0;
    l.last_node = l.never_freed ? live.last_node : dealloc[t];
  }
  for (std::size_t t = 0; t < n; ++t) {
    TensorLiveness& l = lt[t];
    if (l.arena != Arena::kScratch || l.root == static_cast<int>(t)) continue;
    const TensorLiveness& r = lt[static_cast<std::size_t>(l.root)];
    l.last_node = r.last_node;
    l.never_freed = r.never_freed;
  }
  return live;
}

}  // namespace tensormem
