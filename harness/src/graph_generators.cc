// SPDX-License-Identifier: Apache-2.0
// RandWire-style graphs and stacked NAS cells (see graph_generators.h).
#include "harness/graph_generators.h"

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tensormem::internal {
namespace {

using Edges = std::set<std::pair<int, int>>;  // (lower, higher)

void AddEdge(Edges& e, int a, int b) {
  if (a != b) e.insert({std::min(a, b), std::max(a, b)});
}

Edges WattsStrogatz(int n, int k, double p, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> any(0, std::max(0, n - 1));
  Edges e;
  for (int i = 0; i < n; ++i)
    for (int j = 1; j <= k / 2; ++j) {
      int to = (i + j) % n;
      if (u(rng) < p)  // rewire to a node not yet linked
        for (int tries = 0; tries < 8; ++tries) {
          const int c = any(rng);
          if (c != i && !e.count({std::min(i, c), std::max(i, c)})) {
            to = c;
            break;
          }
        }
      AddEdge(e, i, to);
    }
  return e;
}

Edges ErdosRenyi(int n, double p, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  Edges e;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (u(rng) < p) AddEdge(e, i, j);
  return e;
}

Edges BarabasiAlbert(int n, int m, std::mt19937_64& rng) {
  Edges e;
  std::vector<int> ends;  // each node once per edge end: sampling ~ degree
  for (int i = 0; i < std::min(n, m); ++i) ends.push_back(i);
  for (int i = m; i < n; ++i) {
    std::set<int> targets;
    for (int tries = 0; static_cast<int>(targets.size()) < m && tries < 16 * m; ++tries)
      targets.insert(ends[std::uniform_int_distribution<std::size_t>(0, ends.size() - 1)(rng)]);
    for (int t : targets) {
      AddEdge(e, t, i);
      ends.push_back(t);
      ends.push_back(i);
    }
  }
  return e;
}

class Builder {
 public:
  int Tensor(std::uint64_t bytes) {
    std::string name("t");
    name += std::to_string(g.tensors.size());
    g.tensors.push_back({std::move(name), bytes});
    return static_cast<int>(g.tensors.size()) - 1;
  }
  int Node(const char* op, std::vector<int> inputs, std::uint64_t out_bytes) {
    GraphNode n;
    n.name = op;
    n.name += std::to_string(g.nodes.size());
    n.op = op;
    n.inputs = std::move(inputs);
    n.outputs = {Tensor(out_bytes)};
    g.nodes.push_back(std::move(n));
    return g.nodes.back().outputs[0];
  }
  std::uint64_t Bytes(int t) const { return g.tensors[static_cast<std::size_t>(t)].bytes; }
  Graph g;
};

// One stage reading `input`; returns its output tensor.
int Stage(Builder& b, const RandWireParams& params, int input, std::uint64_t channels,
          std::uint64_t pixels, std::mt19937_64& rng) {
  const int n = std::max(1, params.nodes);
  Edges edges = params.model == RandomGraphModel::kWattsStrogatz
                    ? WattsStrogatz(n, params.k, params.p, rng)
                : params.model == RandomGraphModel::kErdosRenyi ? ErdosRenyi(n, params.p, rng)
                                                                 : BarabasiAlbert(n, params.m, rng);
  std::vector<std::vector<int>> preds(static_cast<std::size_t>(n));
  std::vector<char> has_succ(static_cast<std::size_t>(n), 0);
  for (const auto& [a, c] : edges) {
    preds[static_cast<std::size_t>(c)].push_back(a);
    has_succ[static_cast<std::size_t>(a)] = 1;
  }
  std::vector<int> out(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> width(0, 2);
  for (int i = 0; i < n; ++i) {
    std::vector<int> in;
    for (int p : preds[static_cast<std::size_t>(i)]) in.push_back(out[static_cast<std::size_t>(p)]);
    if (in.empty()) in.push_back(input);
    int x = in[0];
    if (in.size() > 1) {
      std::uint64_t joined = 0;
      for (int t : in)
        joined = params.join == JoinKind::kSum ? std::max(joined, b.Bytes(t)) : joined + b.Bytes(t);
      x = b.Node(params.join == JoinKind::kSum ? "sum" : "concat", in, joined);
    }
    const std::uint64_t c = channels / 2 << width(rng);  // half, equal or twice
    out[static_cast<std::size_t>(i)] = b.Node("conv", {x}, c * pixels * 4);
  }
  std::vector<int> sinks;
  for (int i = 0; i < n; ++i)
    if (!has_succ[static_cast<std::size_t>(i)]) sinks.push_back(out[static_cast<std::size_t>(i)]);
  return b.Node("mean", sinks, channels * pixels * 4);
}

// A NAS cell's op on `x` (cell channels c, output pixels px): the nodes it
// adds, or x itself for identity. `reduce`: x is at 4x the pixels.
int NasOp(Builder& b, int kind, int x, std::uint64_t c, std::uint64_t px, bool reduce) {
  const std::uint64_t bytes = c * px * 4;
  switch (kind) {
    case 0:  // separable convolution: (depthwise, pointwise) twice
      x = b.Node("dw_conv", {x}, bytes);
      x = b.Node("pw_conv", {x}, bytes);
      x = b.Node("dw_conv", {x}, bytes);
      return b.Node("pw_conv", {x}, bytes);
    case 1:  // dilated convolution
      x = b.Node("dil_conv", {x}, bytes);
      return b.Node("pw_conv", {x}, bytes);
    case 2: return b.Node("max_pool", {x}, bytes);
    case 3: return b.Node("avg_pool", {x}, bytes);
    default: return reduce ? b.Node("reduce", {x}, bytes) : x;  // identity
  }
}

// One cell reading s0 (two cells back) and s1; returns its output.
int NasCell(Builder& b, const NasCellParams& params, int s0, int s1, std::uint64_t c, std::uint64_t px,
            bool reduction, bool after_reduction, std::mt19937_64& rng) {
  const std::uint64_t in_px = reduction ? px * 4 : px;
  std::vector<int> states = {b.Node(after_reduction ? "reduce" : "conv1x1", {s0}, c * in_px * 4),
                             b.Node("conv1x1", {s1}, c * in_px * 4)};
  std::uniform_int_distribution<int> op(0, 4);
  std::vector<int> inter;
  for (int i = 0; i < std::max(1, params.nodes); ++i) {
    std::uniform_int_distribution<std::size_t> from(0, states.size() - 1);
    std::vector<int> in;
    for (int k = 0; k < 2; ++k) {
      const std::size_t j = from(rng);
      in.push_back(NasOp(b, op(rng), states[j], c, px, reduction && j < 2));
    }
    inter.push_back(b.Node("sum", in, c * px * 4));
    states.push_back(inter.back());
  }
  return b.Node("concat", inter, c * px * 4 * inter.size());
}

}  // namespace

Graph GenerateNasGraph(const NasCellParams& params) {
  std::mt19937_64 rng(params.seed);
  Builder b;
  std::uint64_t c = std::max<std::uint64_t>(1, params.channels);
  std::uint64_t px = std::max<std::uint64_t>(1, params.pixels);
  const int input = b.Tensor(3 * px * 4);
  b.g.inputs = {input};
  int s0 = b.Node("stem", {input}, 3 * c * px * 4), s1 = s0;
  const int cells = std::max(1, params.cells);
  bool reduced = false;
  for (int k = 0; k < cells; ++k) {
    const bool reduction = cells >= 3 && (k == cells / 3 || k == 2 * cells / 3);
    if (reduction) c *= 2, px = std::max<std::uint64_t>(1, px / 4);
    const int out = NasCell(b, params, s0, s1, c, px, reduction, reduced, rng);
    s0 = s1, s1 = out, reduced = reduction;
  }
  b.g.outputs = {b.Node("global_pool", {s1}, c * 4 * static_cast<std::uint64_t>(std::max(1, params.nodes)))};
  return std::move(b.g);
}

Graph GenerateRandWireGraph(const RandWireParams& params) {
  std::mt19937_64 rng(params.seed);
  Builder b;
  std::uint64_t channels = std::max<std::uint64_t>(2, params.channels);
  std::uint64_t pixels = std::max<std::uint64_t>(1, params.pixels);
  int x = b.Tensor(channels * pixels * 4);
  b.g.inputs = {x};
  for (int s = 0; s < std::max(1, params.stages); ++s) {
    x = Stage(b, params, x, channels, pixels, rng);
    channels *= 2;
    pixels = std::max<std::uint64_t>(1, pixels / 4);
  }
  b.g.outputs = {x};
  return std::move(b.g);
}

}  // namespace tensormem::internal
