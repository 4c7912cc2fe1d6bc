// SPDX-License-Identifier: Apache-2.0
// Irregularly wired graphs for the scheduler's tests and benchmarks
// (internal, not installed): RandWire-style networks (Xie et al., 2019).
#pragma once

#include <cstdint>

#include "tensormem/graph.h"

namespace tensormem::internal {

enum class RandomGraphModel : std::uint8_t { kWattsStrogatz, kErdosRenyi, kBarabasiAlbert };
enum class JoinKind : std::uint8_t { kSum, kConcat };

struct RandWireParams {
  RandomGraphModel model = RandomGraphModel::kWattsStrogatz;
  JoinKind join = JoinKind::kSum;
  int nodes = 32;   // random-graph nodes per stage
  int stages = 1;
  int k = 4;        // Watts-Strogatz: ring neighbours (even)
  double p = 0.75;  // Watts-Strogatz: rewiring; Erdos-Renyi: edge probability
  int m = 2;        // Barabasi-Albert: edges per new node
  std::uint64_t channels = 64;  // the first stage's; each stage doubles them
  std::uint64_t pixels = 56 * 56;  // the first stage's; each stage quarters them
  std::uint64_t seed = 1;
};

// One stage per params.stages: an undirected random graph whose edges point
// from lower to higher index; each random-graph node is a join (sum: the
// largest input's bytes; concat: their total) when it has two or more
// inputs, then a convolution writing its own channel count (half, equal or
// twice the stage's, at random: mixed channel counts) of 4-byte floats.
// Nodes without inputs read the stage input; a final sum averages the nodes
// without outputs into the stage output, the next stage's input. Nodes in
// index order (a valid order, not a memory-aware one). Deterministic per seed.
Graph GenerateRandWireGraph(const RandWireParams& params);

}  // namespace tensormem::internal
