// SPDX-License-Identifier: Apache-2.0
// Small graphs for the graph planner's tests.
#pragma once

#include <initializer_list>
#include <string>

#include "tensormem/graph.h"

namespace tensormem::testing {

// prefix + number (built by appending: GCC 12 -O3 warns falsely on "t" + str).
inline std::string Numbered(const char* prefix, std::size_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

// A graph of `n` activations of `bytes` each (tensor i named "t<i>").
inline Graph MakeGraph(int n, std::uint64_t bytes) {
  Graph g;
  for (int i = 0; i < n; ++i) g.tensors.push_back({Numbered("t", static_cast<std::size_t>(i)), bytes});
  return g;
}

inline void AddNode(Graph& g, std::initializer_list<int> inputs, std::initializer_list<int> outputs,
                    std::initializer_list<int> temporaries = {}, InPlace in_place = InPlace::kNone) {
  GraphNode n;
  n.op = Numbered("op", g.nodes.size());
  n.inputs = inputs;
  n.outputs = outputs;
  n.temporaries = temporaries;
  n.in_place = in_place;
  g.nodes.push_back(std::move(n));
}

// A chain 0 -> 1 -> ... -> n-1 (tensor 0 the input, n-1 the output).
inline Graph MakeChain(int n, std::uint64_t bytes) {
  Graph g = MakeGraph(n, bytes);
  g.inputs = {0};
  g.outputs = {n - 1};
  for (int i = 0; i + 1 < n; ++i) AddNode(g, {i}, {i + 1});
  return g;
}

}  // namespace tensormem::testing

#include <random>

namespace tensormem::testing {

// A random graph in execution order: inputs, constants, nodes reading 1-3
// earlier tensors and writing 1-2 new ones, temporaries, in-place flags
// (sizes sometimes equal so sharing happens), zero-byte and dynamic tensors.
inline Graph MakeRandomGraph(std::uint64_t seed, int nodes) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  auto chance = [&](int percent) { return static_cast<int>(pick(100)) < percent; };
  auto bytes = [&] { return std::uint64_t{1} + pick(4096); };
  Graph g;
  std::vector<int> readable;
  auto add = [&](TensorKind kind, std::uint64_t b) {
    g.tensors.push_back({Numbered("t", g.tensors.size()), b, kind,
                         chance(10) ? std::uint64_t{1} << pick(9) : 0});
    return static_cast<int>(g.tensors.size()) - 1;
  };
  for (int i = 0, n = 1 + static_cast<int>(pick(2)); i < n; ++i) {
    g.inputs.push_back(add(chance(10) ? TensorKind::kDynamic : TensorKind::kActivation, bytes()));
    readable.push_back(g.inputs.back());
  }
  if (chance(30)) g.inputs.push_back(kNoTensor);
  for (int i = 0; i < 3; ++i) readable.push_back(add(TensorKind::kConstant, bytes()));
  for (int k = 0; k < nodes; ++k) {
    GraphNode node;
    node.op = "op";
    for (int i = 0, n = 1 + static_cast<int>(pick(3)); i < n; ++i)
      node.inputs.push_back(chance(5) ? kNoTensor : readable[readable.size() - 1 - pick(std::min<std::size_t>(readable.size(), 6))]);
    const std::uint64_t in0 = node.inputs[0] >= 0 ? g.tensors[static_cast<std::size_t>(node.inputs[0])].bytes : 64;
    for (int i = 0, n = 1 + static_cast<int>(chance(25)); i < n; ++i) {
      std::uint64_t b = chance(40) ? in0 : bytes();
      if (chance(5)) b = 0;
      node.outputs.push_back(add(chance(3) ? TensorKind::kDynamic : TensorKind::kActivation, b));
      readable.push_back(node.outputs.back());
    }
    if (chance(20)) node.temporaries.push_back(add(TensorKind::kActivation, bytes()));
    if (chance(40)) node.in_place = chance(50) ? InPlace::kInput0 : InPlace::kInput0Unmodified;
    g.nodes.push_back(std::move(node));
  }
  g.outputs.push_back(readable.back());
  if (chance(50)) g.outputs.push_back(readable[readable.size() / 2]);
  return g;
}

}  // namespace tensormem::testing
