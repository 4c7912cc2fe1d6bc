// SPDX-License-Identifier: Apache-2.0
// Irregularly wired graphs for the scheduler's tests and benchmarks
// (internal, not installed): RandWire-style networks (Xie et al., 2019)
// and stacks of NAS cells (DARTS/NASNet-style normal and reduction cells).
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

struct NasCellParams {
  int cells = 8;          // stacked; the ones at 1/3 and 2/3 are reduction cells
  int nodes = 4;          // intermediate nodes per cell
  std::uint64_t channels = 16;     // the first cells'; a reduction cell doubles them
  std::uint64_t pixels = 32 * 32;  // the first cells'; a reduction cell quarters them
  std::uint64_t seed = 1;
};

// A stem, then `cells` cells, each reading the two cells before it (the
// stem twice at first). A cell: each input through a 1x1 convolution to the
// cell's channels (a reduction of the input two cells back when the cell
// before reduced); each intermediate node the sum of two ops, each on an
// earlier state of the cell (its two inputs or an earlier node), at random:
// separable convolution (depthwise, pointwise, twice: 4 nodes), dilated
// convolution (depthwise, pointwise), max or average pooling (1 node) or
// identity (none; a 1x1 reduction where a reduction cell reads a cell
// input, as ops on cell inputs there have stride 2); the cell's output the
// concatenation of its intermediate nodes. Then a pooling of the last cell.
// 4-byte floats; nodes in construction order. Deterministic per seed.
Graph GenerateNasGraph(const NasCellParams& params);

}  // namespace tensormem::internal
