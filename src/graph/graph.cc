// SPDX-License-Identifier: Apache-2.0
// The graph model: names, labels for messages, the structural check and the
// tensor roles.
#include "tensormem/graph.h"

#include <limits>
#include <unordered_map>

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

Status CheckGraph(const Graph& graph) {
  const std::size_t n = graph.tensors.size();
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    return OutOfRange("graph has " + std::to_string(n) + " tensors; at most 2^31 - 1 are supported");
  std::unordered_map<std::string_view, std::size_t> names;
  names.reserve(n);
  for (std::size_t t = 0; t < n; ++t) {
    const GraphTensor& tensor = graph.tensors[t];
    // 0 = the plan's (GraphPlanParams::alignment), the one documented default.
    if (tensor.alignment != 0)
      TM_RETURN_IF_ERROR(ValidateAlignment(tensor.alignment, TensorLabel(graph, static_cast<int>(t))));
    if (!tensor.name.empty()) {
      auto [it, inserted] = names.emplace(tensor.name, t);
      if (!inserted)
        return InvalidArgument("tensors #" + std::to_string(it->second) + " and #" +
                               std::to_string(t) + " share the name '" + tensor.name + "'");
    }
  }
  auto in_range = [&](int t) { return t >= 0 && static_cast<std::size_t>(t) < n; };
  // `what` names the list; called only for a message, as a graph of a
  // million nodes would otherwise build a million labels.
  auto check_list = [&](const std::vector<int>& list, const auto& what, bool optional_ok) -> Status {
    for (std::size_t k = 0; k < list.size(); ++k) {
      const int t = list[k];
      if (t == kNoTensor && optional_ok) continue;
      if (!in_range(t))
        return InvalidArgument(what() + " entry " + std::to_string(k) + ": tensor index " +
                               std::to_string(t) + " is out of range [0, " + std::to_string(n) +
                               ")" + (optional_ok ? " and not -1 (absent)" : ""));
    }
    return Status::Ok();
  };
  TM_RETURN_IF_ERROR(check_list(graph.inputs, [] { return std::string("graph inputs"); }, true));
  TM_RETURN_IF_ERROR(check_list(graph.outputs, [] { return std::string("graph outputs"); }, true));

  std::vector<char> is_input(n, 0);
  for (int t : graph.inputs)
    if (t != kNoTensor) is_input[static_cast<std::size_t>(t)] = 1;
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> writer(n, kNone), temp_of(n, kNone), first_reader(n, kNone);
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = graph.nodes[i];
    auto where = [&] { return NodeLabel(graph, i); };
    TM_RETURN_IF_ERROR(check_list(node.inputs, [&] { return where() + ": inputs"; }, true));
    TM_RETURN_IF_ERROR(check_list(node.outputs, [&] { return where() + ": outputs"; }, true));
    TM_RETURN_IF_ERROR(check_list(node.temporaries, [&] { return where() + ": temporaries"; }, false));
    for (int t : node.inputs)
      if (t != kNoTensor && first_reader[static_cast<std::size_t>(t)] == kNone)
        first_reader[static_cast<std::size_t>(t)] = i;
    for (int t : node.outputs) {
      if (t == kNoTensor) continue;
      const auto u = static_cast<std::size_t>(t);
      auto what = [&] { return where() + " writes " + TensorLabel(graph, t); };
      if (writer[u] != kNone)
        return InvalidArgument(what() + ", already written by " + NodeLabel(graph, writer[u]));
      if (is_input[u]) return InvalidArgument(what() + ", a graph input");
      if (graph.tensors[u].kind == TensorKind::kConstant)
        return InvalidArgument(what() + ", a constant");
      if (first_reader[u] != kNone)
        return InvalidArgument(what() + ", but " + NodeLabel(graph, first_reader[u]) +
                               " reads it earlier (nodes must be in execution order)");
      writer[u] = i;
    }
    for (int t : node.temporaries) {
      const auto u = static_cast<std::size_t>(t);
      if (temp_of[u] != kNone)
        return InvalidArgument(where() + ": temporary " + TensorLabel(graph, t) +
                               " is already a temporary of " + NodeLabel(graph, temp_of[u]));
      if (graph.tensors[u].kind != TensorKind::kActivation &&
          graph.tensors[u].kind != TensorKind::kDynamic)
        return InvalidArgument(where() + ": temporary " + TensorLabel(graph, t) + " is a " +
                               std::string(Name(graph.tensors[u].kind)));
      temp_of[u] = i;
    }
  }
  for (std::size_t t = 0; t < n; ++t) {
    if (temp_of[t] == kNone) continue;
    if (writer[t] != kNone || first_reader[t] != kNone || is_input[t])
      return InvalidArgument(TensorLabel(graph, static_cast<int>(t)) + " is a temporary of " +
                             NodeLabel(graph, temp_of[t]) +
                             " and also a node input/output or graph input");
  }
  for (int t : graph.outputs)
    if (t != kNoTensor && temp_of[static_cast<std::size_t>(t)] != kNone)
      return InvalidArgument(TensorLabel(graph, t) + " is a temporary of " +
                             NodeLabel(graph, temp_of[static_cast<std::size_t>(t)]) +
                             " and also a graph output");
  return Status::Ok();
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
