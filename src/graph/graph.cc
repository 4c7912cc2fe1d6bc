// SPDX-License-Identifier: Apache-2.0
// The graph model: names, labels for messages, the structural check and the
// tensor roles.
#include "tensormem/graph.h"

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/name_map.h"

namespace tensormem {

std::string_view Name(TensorKind kind) {
  switch (kind) {
    case TensorKind::kActivation: return "activation";
    case TensorKind::kConstant: return "constant";
    case TensorKind::kVariable: return "variable";
    case TensorKind::kDynamic: return "dynamic";
  }
  return "unknown";
}

std::string_view Name(TensorRole role) {
  switch (role) {
    case TensorRole::kInput: return "input";
    case TensorRole::kOutput: return "output";
    case TensorRole::kIntermediate: return "intermediate";
    case TensorRole::kTemporary: return "temporary";
    case TensorRole::kConstant: return "constant";
    case TensorRole::kVariable: return "variable";
    case TensorRole::kDynamic: return "dynamic";
    case TensorRole::kUnused: return "unused";
  }
  return "unknown";
}

std::string_view Name(Arena arena) {
  switch (arena) {
    case Arena::kNone: return "none";
    case Arena::kScratch: return "scratch";
    case Arena::kPersistent: return "persistent";
  }
  return "unknown";
}

std::string TensorLabel(const Graph& graph, int tensor) {
  if (tensor >= 0 && static_cast<std::size_t>(tensor) < graph.tensors.size() &&
      !graph.tensors[static_cast<std::size_t>(tensor)].name.empty())
    return "tensor '" + graph.tensors[static_cast<std::size_t>(tensor)].name + "'";
  return "tensor #" + std::to_string(tensor);
}

std::string NodeLabel(const Graph& graph, std::size_t node) {
  std::string s = "node " + std::to_string(node);
  if (node < graph.nodes.size()) {
    const GraphNode& n = graph.nodes[node];
    if (!n.name.empty() || !n.op.empty()) {
      s += " (";
      if (!n.name.empty()) s += "'" + n.name + "'";
      if (!n.name.empty() && !n.op.empty()) s += ", ";
      if (!n.op.empty()) s += n.op;
      s += ")";
    }
  }
  return s;
}

std::string TensorId(const Graph& graph, int tensor) {
  const std::string& name = graph.tensors[static_cast<std::size_t>(tensor)].name;
  return name.empty() ? std::to_string(tensor) : name;
}

namespace {

constexpr std::size_t kNoNode = static_cast<std::size_t>(-1);

// Tensor alignments, and names unique.
Status CheckTensors(const Graph& graph) {
  internal::NameMap<std::size_t> names;
  names.Reserve(graph.tensors.size());
  for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
    const GraphTensor& tensor = graph.tensors[t];
    // 0 = the plan's (GraphPlanParams::alignment), the one documented default.
    if (tensor.alignment != 0)
      TM_RETURN_IF_ERROR(ValidateAlignment(tensor.alignment, TensorLabel(graph, static_cast<int>(t))));
    if (!tensor.name.empty()) {
      const auto [first, inserted] = names.TryEmplace(tensor.name, t);
      if (!inserted)
        return InvalidArgument("tensors #" + std::to_string(*first) + " and #" + std::to_string(t) +
                               " share the name '" + tensor.name + "'");
    }
  }
  return Status::Ok();
}

// Every entry of `list` a tensor index (or kNoTensor where optional_ok).
// `what()` names the list; it is called only for a message, as a graph of
// a million nodes would otherwise build a million labels.
template <typename What>
Status CheckTensorList(const Graph& graph, const std::vector<int>& list, const What& what, bool optional_ok) {
  const std::size_t n = graph.tensors.size();
  for (std::size_t k = 0; k < list.size(); ++k) {
    const int t = list[k];
    if (t == kNoTensor && optional_ok) continue;
    if (t < 0 || static_cast<std::size_t>(t) >= n)
      return InvalidArgument(what() + " entry " + std::to_string(k) + ": tensor index " + std::to_string(t) +
                             " is out of range [0, " + std::to_string(n) + ")" +
                             (optional_ok ? " and not -1 (absent)" : ""));
  }
  return Status::Ok();
}

// What the node walk of CheckGraph records per tensor.
struct GraphRoles {
  std::vector<char> is_input;
  std::vector<std::size_t> writer, temp_of, first_reader;  // kNoNode: none
};

// Node i's outputs: each written once, not a graph input or a constant,
// and not read by an earlier node.
Status CheckOutputs(const Graph& graph, std::size_t i, GraphRoles& roles) {
  for (int t : graph.nodes[i].outputs) {
    if (t == kNoTensor) continue;
    const auto u = static_cast<std::size_t>(t);
    const auto what = [&] { return NodeLabel(graph, i) + " writes " + TensorLabel(graph, t); };
    if (roles.writer[u] != kNoNode)
      return InvalidArgument(what() + ", already written by " + NodeLabel(graph, roles.writer[u]));
    if (roles.is_input[u]) return InvalidArgument(what() + ", a graph input");
    if (graph.tensors[u].kind == TensorKind::kConstant) return InvalidArgument(what() + ", a constant");
    if (roles.first_reader[u] != kNoNode)
      return InvalidArgument(what() + ", but " + NodeLabel(graph, roles.first_reader[u]) +
                             " reads it earlier (nodes must be in execution order)");
    roles.writer[u] = i;
  }
  return Status::Ok();
}

// Node i's temporaries: each of one node only, an activation (or dynamic).
Status CheckTemporaries(const Graph& graph, std::size_t i, GraphRoles& roles) {
  for (int t : graph.nodes[i].temporaries) {
    const auto where = [&] { return NodeLabel(graph, i); };
    const auto u = static_cast<std::size_t>(t);
    if (roles.temp_of[u] != kNoNode)
      return InvalidArgument(where() + ": temporary " + TensorLabel(graph, t) + " is already a temporary of " +
                             NodeLabel(graph, roles.temp_of[u]));
    if (graph.tensors[u].kind != TensorKind::kActivation && graph.tensors[u].kind != TensorKind::kDynamic)
      return InvalidArgument(where() + ": temporary " + TensorLabel(graph, t) + " is a " +
                             std::string(Name(graph.tensors[u].kind)));
    roles.temp_of[u] = i;
  }
  return Status::Ok();
}

Status CheckNode(const Graph& graph, std::size_t i, GraphRoles& roles) {
  const GraphNode& node = graph.nodes[i];
  const auto where = [&](const char* list) { return NodeLabel(graph, i) + ": " + list; };
  TM_RETURN_IF_ERROR(CheckTensorList(graph, node.inputs, [&] { return where("inputs"); }, true));
  TM_RETURN_IF_ERROR(CheckTensorList(graph, node.outputs, [&] { return where("outputs"); }, true));
  TM_RETURN_IF_ERROR(CheckTensorList(graph, node.temporaries, [&] { return where("temporaries"); }, false));
  for (int t : node.inputs)
    if (t != kNoTensor && roles.first_reader[static_cast<std::size_t>(t)] == kNoNode)
      roles.first_reader[static_cast<std::size_t>(t)] = i;
  TM_RETURN_IF_ERROR(CheckOutputs(graph, i, roles));
  return CheckTemporaries(graph, i, roles);
}

// A temporary is nothing else: no node's input or output, no graph input
// or output.
Status CheckTemporariesAreOnlyThat(const Graph& graph, const GraphRoles& roles) {
  for (std::size_t t = 0; t < graph.tensors.size(); ++t) {
    if (roles.temp_of[t] == kNoNode) continue;
    if (roles.writer[t] != kNoNode || roles.first_reader[t] != kNoNode || roles.is_input[t])
      return InvalidArgument(TensorLabel(graph, static_cast<int>(t)) + " is a temporary of " +
                             NodeLabel(graph, roles.temp_of[t]) + " and also a node input/output or graph input");
  }
  for (int t : graph.outputs)
    if (t != kNoTensor && roles.temp_of[static_cast<std::size_t>(t)] != kNoNode)
      return InvalidArgument(TensorLabel(graph, t) + " is a temporary of " +
                             NodeLabel(graph, roles.temp_of[static_cast<std::size_t>(t)]) + " and also a graph output");
  return Status::Ok();
}

}  // namespace

Status CheckGraph(const Graph& graph) {
  const std::size_t n = graph.tensors.size();
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    return OutOfRange("graph has " + std::to_string(n) + " tensors; at most 2^31 - 1 are supported");
  TM_RETURN_IF_ERROR(CheckTensors(graph));
  TM_RETURN_IF_ERROR(CheckTensorList(graph, graph.inputs, [] { return std::string("graph inputs"); }, true));
  TM_RETURN_IF_ERROR(CheckTensorList(graph, graph.outputs, [] { return std::string("graph outputs"); }, true));
  GraphRoles roles{std::vector<char>(n, 0), std::vector<std::size_t>(n, kNoNode),
                   std::vector<std::size_t>(n, kNoNode), std::vector<std::size_t>(n, kNoNode)};
  for (int t : graph.inputs)
    if (t != kNoTensor) roles.is_input[static_cast<std::size_t>(t)] = 1;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) TM_RETURN_IF_ERROR(CheckNode(graph, i, roles));
  return CheckTemporariesAreOnlyThat(graph, roles);
}

std::vector<TensorRole> TensorRoles(const Graph& graph) {
  const std::size_t n = graph.tensors.size();
  std::vector<TensorRole> roles(n, TensorRole::kUnused);
  auto valid = [&](int t) { return t >= 0 && static_cast<std::size_t>(t) < n; };
  for (const GraphNode& node : graph.nodes) {
    for (int t : node.outputs)
      if (valid(t)) roles[static_cast<std::size_t>(t)] = TensorRole::kIntermediate;
    for (int t : node.temporaries)
      if (valid(t)) roles[static_cast<std::size_t>(t)] = TensorRole::kTemporary;
  }
  for (int t : graph.outputs)
    if (valid(t)) roles[static_cast<std::size_t>(t)] = TensorRole::kOutput;
  for (int t : graph.inputs)
    if (valid(t)) roles[static_cast<std::size_t>(t)] = TensorRole::kInput;
  for (std::size_t t = 0; t < n; ++t) {
    switch (graph.tensors[t].kind) {
      case TensorKind::kConstant: roles[t] = TensorRole::kConstant; break;
      case TensorKind::kVariable: roles[t] = TensorRole::kVariable; break;
      case TensorKind::kDynamic: roles[t] = TensorRole::kDynamic; break;
      case TensorKind::kActivation: break;
    }
  }
  return roles;
}

}  // namespace tensormem
