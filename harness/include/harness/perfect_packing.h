// SPDX-License-Identifier: Apache-2.0
// Perfectly packed instances: a rectangle of `tasks` x `bytes` cut
// recursively by guillotine cuts into N pieces, each piece one buffer (its
// time span the lifetime, its byte span the size). Every byte of every task
// is used, so the optimum is exactly `bytes` (the peak live bytes) and a fit
// at that capacity is always possible; the pieces are shuffled and renamed
// so the input order gives no hint. A stress test of the exact solver (zero
// slack), used by solver_test and solver_bench.
//
// Deterministic for given options on every platform (own PRNG, no
// std::*_distribution).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensormem/problem.h"
#include "tensormem/types.h"

namespace tensormem::solver {

struct PerfectPackingOptions {
  std::size_t buffers = 100;         // N pieces (fewer when the rectangle runs out of cuts)
  std::uint64_t seed = 1;
  TaskIndex tasks = 1000;            // time axis: tasks 0 .. tasks-1
  std::uint64_t bytes = 1u << 20;    // byte axis; the optimum
  // Cut depth: which piece is cut next. 0 = always the largest area
  // (balanced, shallow trees), 1 = always the newest piece (deep, chain-like
  // trees: a few large pieces and many small ones); in between, a mix.
  double depth = 0.0;
  // Aspect: the chance that a cut splits the time axis (the rest split the
  // bytes); 0.5 gives squarish pieces, near 0 or 1 long thin ones.
  double time_cut_share = 0.5;
  // Cut positions are uniform in [balance, 1 - balance] of the side (0 <=
  // balance < 0.5): small values give very unequal pieces.
  double balance = 0.1;
  // Byte cuts land on multiples of this (keeps sizes aligned like real
  // buffers; 1 = any byte).
  std::uint64_t byte_granule = 1;
};

// Buffers named "0".."N-1", capacity = bytes. Pieces that cannot be cut
// further (one task by one granule) are left whole.
Problem PerfectPacking(const PerfectPackingOptions& options);

// The shared family of the test and the benchmark: N buffers, and a shape
// chosen by seed % 5 (cut depth 0 / 0.5 / 0.9 / 0.3 / 0.7, time-cut share
// 0.5 / 0.3 / 0.5 / 0.7 / 0.5, balance 0.2 / 0.1 / 0.1 / 0.05 / 0.3) on the
// default 1000-task x 2^20-byte rectangle.
PerfectPackingOptions PerfectPackingVariant(std::size_t buffers, std::uint64_t seed);

}  // namespace tensormem::solver
