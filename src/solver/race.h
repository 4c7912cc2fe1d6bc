// SPDX-License-Identifier: Apache-2.0
// Racing searches (SolverParams::threads): the same problem searched on
// several threads, each in its own buffer order (the first search of each
// portfolio in the problem's, which SolveOffsets made canonical; search k
// otherwise in one shuffled from seed k). The order breaks the engines' ties,
// so the searches explore different plans; what they share is two numbers
// and a flag: the lowest plan height any has found (searches 1.. descend
// below it; search 0 keeps its own descent, so a race is never a worse
// search than one thread alone, only a busier machine), the highest bound
// any has proven (valid for all: the same buffers), and "done" (the
// optimum proven, nothing fits, or a fit found). Their plans stay their
// own; the answer is the lowest, mapped back to the problem's order and
// validated. Minimising with the default portfolio, the odd searches run
// WeightedRestartsPortfolio() instead: the two prove different instances.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "tensormem/problem.h"
#include "tensormem/solver.h"
#include "tensormem/status.h"

namespace tensormem::solver {

struct RaceShared {
  std::atomic<std::uint64_t> best{UINT64_MAX};
  std::atomic<std::uint64_t> bound{0};
  std::atomic<bool> done{false};
  // The first search to prove that nothing fits computes the infeasible
  // subset (SolverParams::compute_iis); the others need not.
  std::atomic<bool> iis_claimed{false};

  void OfferBest(std::uint64_t height) {
    std::uint64_t seen = best.load(std::memory_order_relaxed);
    while (height < seen && !best.compare_exchange_weak(seen, height, std::memory_order_relaxed)) {
    }
  }
  void OfferBound(std::uint64_t proven) {
    std::uint64_t seen = bound.load(std::memory_order_relaxed);
    while (proven > seen && !bound.compare_exchange_weak(seen, proven, std::memory_order_relaxed)) {
    }
  }
};

// One search of a race: SolveOffsets on validated input, sharing `race`
// (solver.cc). It always shares its plans' heights and takes the race's
// bound and stop flag; `follow_frontier`: it also descends below the race's
// lowest plan rather than its own.
// `caller_index`: the caller's index of each buffer, for the reasons that
// name one (canonical_order.h; empty: the problem's own).
Result<SolveResult> SolveRaceMember(const Problem& problem, const SolverParams& params,
                                    RaceShared* race, bool follow_frontier,
                                    std::span<const std::size_t> caller_index);

// The race of `threads` (>= 2) searches (race.cc); params validated.
Result<SolveResult> SolveRace(const Problem& problem, const SolverParams& params,
                              unsigned threads, std::span<const std::size_t> caller_index);

}  // namespace tensormem::solver
