// One partition at one capacity: "is there a placement with every top <=
// capacity?", answered by the engines.
//
// Plain partitions go to the skyline engine. How soon a depth-first search
// finds a plan depends, by orders of magnitude, on how it branches and in
// which static order it tries buffers, while every configuration is a
// complete search. So the configurations of SolverParams::portfolio run
// round robin, each restarted with twice the node budget of the previous
// round (a deterministic restart schedule): a plan found by any of them is
// an answer, and any one finishing its search without a plan is a proof
// that none exists. The cost of the restarts is at most the work of the
// last round. Windowed partitions go to the general engine, once.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "solver/instance.h"
#include "solver/search_control.h"
#include "tensormem/solver.h"

namespace tensormem::solver {

class PartitionSolver {
 public:
  PartitionSolver(const Instance& instance, const SolverParams& params);

  // `budget`: nodes for this probe (UINT64_MAX: until the solve's limits).
  SearchOutcome Probe(std::uint64_t capacity, std::uint64_t budget, SearchControl& control);

  // After kFound: offset per item, and the highest top.
  const std::vector<std::uint64_t>& offsets() const { return offsets_; }
  std::uint64_t height() const { return height_; }

 private:
  const Instance& inst_;
  const SolverParams& params_;
  std::vector<std::unique_ptr<Instance>> by_order_;  // ranks per CanonicalOrder
  std::vector<std::uint64_t> offsets_;
  std::uint64_t height_ = 0;
};

}  // namespace tensormem::solver
