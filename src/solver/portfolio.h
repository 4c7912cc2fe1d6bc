// SPDX-License-Identifier: Apache-2.0
// One partition at one capacity: "is there a placement with every top <=
// capacity?", answered by the engines.
//
// Plain partitions go to the skyline engine. How soon a depth-first search
// finds a plan depends, by orders of magnitude, on how it branches and in
// which static order it tries buffers, while every configuration is a
// complete search. So the configurations of SolverParams::portfolio run side
// by side: each in turn continues its own search for a slice of nodes
// (SolverParams::portfolio_slice_nodes). A plan found by any of them is an
// answer, and any one finishing its search without a plan is a proof that
// none exists; the cost is at most the number of configurations times that
// of the fastest one. (Restarting them with doubling budgets instead would
// repeat the same work each round: the searches are deterministic.) The
// searches of the last capacity asked are kept, so a later probe at the
// same capacity goes on where they stopped. A restarting configuration
// (SearchConfig::restarts) instead starts a new run, with its static order
// shuffled from a new seed, whenever its run has spent Luby(run) x
// max(slice, 2 x items) nodes. Windowed partitions go to the general
// engine, once. Zero-slack partitions (the same live bytes in every time
// section, SolverParams::time_sweep) also run the time sweep
// (time_sweep.h), forwards and backwards, at any capacity at or above that
// load: the sweeps take turns whenever their effort is behind their share
// (about two thirds of the time, counted over every probe), the first turn
// included. Two more pairs with other chance thresholds (other pairing
// orders: an instance one order gets lost in, another often fits in one
// pass) join once the first pair has spent 8 units of effort per item
// without a plan, past what it needs where it fits at all.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "solver/instance.h"
#include "solver/search_control.h"
#include "solver/subset_sum_table.h"
#include "tensormem/solver.h"

namespace tensormem::solver {

class SkylineSearch;
class TimeSweep;

class PartitionSolver {
 public:
  PartitionSolver(const Instance& instance, const SolverParams& params);
  ~PartitionSolver();

  // `budget`: nodes for this probe (UINT64_MAX: until the solve's limits).
  // kExhausted proves the partition's height > capacity, hence >=
  // ProvenAbove(capacity).
  SearchOutcome Probe(std::uint64_t capacity, std::uint64_t budget, SearchControl& control);

  // After kFound: offset per item, and the highest top.
  const std::vector<std::uint64_t>& offsets() const { return offsets_; }
  std::uint64_t height() const { return height_; }
  // After kLimit: every configuration stopped at that capacity because its
  // path outgrew SolverParams::search_memory_bytes (probing it again does
  // nothing).
  bool gave_up() const { return gave_up_; }
  // After kLimit: the general engine went through all its candidates at
  // that capacity without a plan and, with an alignment above one, without
  // a proof (GeneralSearch::exhausted_unproven). Probes at that capacity or
  // lower answer kLimit at once from then on, spending no node.
  bool general_unproven() const { return general_unproven_; }
  // The least height a plan can have once none fits in `capacity`: the next
  // multiple of the granule (Instance::granule).
  std::uint64_t ProvenAbove(std::uint64_t capacity) const {
    const std::uint64_t c = RoundDownTo(capacity, inst_.granule);
    return c > UINT64_MAX - inst_.granule ? UINT64_MAX : c + inst_.granule;
  }

 private:
  struct ProbeState;
  // Probe's steps.
  SearchOutcome ProbeGeneral(std::uint64_t capacity, std::uint64_t budget, SearchControl& control);
  void KeepOrResetSearches(std::uint64_t capacity, std::size_t configs);
  std::uint64_t SliceNodes() const;
  std::size_t NextSweep(std::uint64_t capacity, bool skyline_left) const;
  bool SweepTurn(std::size_t sweep, ProbeState& p);
  std::uint64_t RunBudget(std::size_t slot, const SearchConfig& config, std::uint64_t slice) const;
  std::unique_ptr<SkylineSearch> StartSearch(std::size_t slot, const ProbeState& p);
  std::optional<SearchOutcome> SkylineTurn(std::size_t slot, ProbeState& p);
  void BoundSearchMemory(std::size_t running, const std::vector<SearchConfig>& portfolio);

  const Instance& inst_;
  const SolverParams& params_;
  // The items' ranks per CanonicalOrder (empty: not computed yet).
  std::vector<std::vector<std::uint32_t>> by_order_;
  // The searches of the portfolio at capacity_ (null: not started yet), and
  // which one runs next.
  std::vector<std::unique_ptr<SkylineSearch>> searches_;
  // Restarting configurations: runs started, and nodes of the current run.
  std::vector<std::uint64_t> runs_, run_nodes_;
  // Weighted restarts (SearchConfig::weighted), per configuration: the
  // failures per section of the current run, the decayed weights of the
  // runs before it (kept across capacities), and the order made from them.
  std::vector<std::vector<std::uint32_t>> section_failures_;
  std::vector<std::vector<double>> section_weights_;
  std::vector<std::vector<std::uint32_t>> weighted_ranks_;
  // Folds the last run's failures into the weights of configuration `slot`
  // and returns the order for its next run (null: no failure seen yet).
  const std::vector<std::uint32_t>* WeightedRanks(std::size_t slot,
                                                  const std::vector<std::uint32_t>& ranks);
  // Configurations stopped for good at capacity_ (their path outgrew
  // SolverParams::search_memory_bytes).
  std::vector<std::uint8_t> over_memory_;
  std::uint64_t capacity_ = 0;
  std::size_t next_ = 0;
  std::size_t winner_ = SIZE_MAX;  // the configuration that found the last plan
  std::vector<std::uint64_t> offsets_;
  std::uint64_t height_ = 0;
  bool gave_up_ = false;
  bool general_unproven_ = false;
  // The highest capacity at which the general engine ended so.
  std::optional<std::uint64_t> general_unproven_at_;
  // The sweeps' subset-sum tables, reused (declared first: it outlives them).
  SubsetSumStorage table_storage_;
  // The time sweeps (forwards, backwards) of a zero-slack partition, kept
  // across capacities (their plans have the same height at any); empty
  // when the partition is not zero slack or SolverParams::time_sweep is off.
  std::vector<std::unique_ptr<TimeSweep>> sweeps_;
  std::vector<std::uint8_t> sweep_done_;  // ran out (kExhausted)
  std::size_t next_sweep_ = 0;
  // The sweeps' effort and the skyline nodes so far, over every probe: the
  // sweeps take their turn whenever they are behind their share.
  std::uint64_t sweep_effort_ = 0, skyline_nodes_ = 0;
};

}  // namespace tensormem::solver
