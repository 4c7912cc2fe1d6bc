// SPDX-License-Identifier: Apache-2.0
// An irreducible infeasible subset (IIS): a set of buffers that alone does
// not fit in the capacity, while every proper subset does.
//
// Deletion filter: start from a small infeasible set (the culprits of a
// quick proof, else the buffers live at a task whose live bytes exceed the
// capacity, else everything); for each buffer in index order, drop it when
// the rest is still proven infeasible by the solver. Each test gets an equal
// share of SolverParams::iis_time_limit_seconds; a test that ends without an
// answer keeps its buffer, and the subset is then reported as not proven
// irreducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensormem/problem.h"
#include "tensormem/solver.h"
#include "tensormem/status.h"

namespace tensormem::solver {

struct IisResult {
  std::vector<std::size_t> buffers;  // ascending
  bool irreducible = false;
};

Result<IisResult> IrreducibleInfeasibleSubset(const Problem& problem, std::uint64_t capacity,
                                              const SolverParams& params,
                                              std::vector<std::size_t> start);

}  // namespace tensormem::solver
