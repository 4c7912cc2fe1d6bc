// SPDX-License-Identifier: Apache-2.0
// The exact offset solver: the smallest arena for an offsets problem, or the
// answer to "does it fit in N bytes?", with proofs.
//
// A branch and bound over canonical placements in the spirit of Google's
// MiniMalloc (buffers placed in non-decreasing offset order, each at the
// lowest offset the "skyline" of already placed buffers allows; symmetric and
// dominated partial solutions skipped; per-time-section bounds; independent
// time partitions solved apart, statically and during the search), started
// from the best heuristic plan and tightened probe by probe. Anytime: when
// the time or node limit hits it returns the best valid plan found with its
// proven lower bound and gap. Deterministic for a given problem and node
// limit (time only decides when to stop), whatever the order of its buffers
// and their ids: the search runs on the buffers sorted by their own data
// (lifetime, size, alignment, fixed offset, gaps) and the plan is mapped
// back to the caller's order. docs/design/solver.md says how it works.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensormem/problem.h"
#include "tensormem/solver_tuning.h"
#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem {

enum class SolveStatus {
  kOptimal,     // a plan whose height equals the proven lower bound
  kFeasible,    // a plan within the capacity (kFit), or the best found so far (kMinimize)
  kInfeasible,  // proven: no plan fits in the capacity
  kUnknown,     // limit hit: no plan within the capacity found, none proven impossible
};

std::string_view Name(SolveStatus status);  // "optimal", "feasible", ...

enum class SolveGoal {
  kMinimize,  // the smallest height (within the capacity, when one is set)
  kFit,       // any plan within the capacity (required); stops at the first
};

struct SolveProgress {
  std::uint64_t best_height = 0;  // meaningful when has_plan
  bool has_plan = false;
  std::uint64_t lower_bound = 0;
  std::uint64_t nodes = 0;
  double seconds = 0;
};

// What a user decides about a solve, with the defaults we recommend; how
// the search goes about it is SolverParams::tuning (solver_tuning.h).
struct SolverParams {
  SolveGoal goal = SolveGoal::kMinimize;
  // Overrides Problem::capacity when set. kFit needs one of the two.
  std::optional<std::uint64_t> capacity;
  // Every offset is a multiple of this and of the buffer's own alignment (a
  // power of two, ValidateAlignment).
  std::uint64_t alignment = 1;

  // Wall-clock limit of the whole solve, the heuristics it starts from
  // included: +infinity for none; 0 runs only the presolve and the
  // heuristics (untimed). When it hits, the best plan so far is returned
  // (kUnknown without a plan when even the heuristics did not finish).
  double time_limit_seconds = 10.0;
  // Search nodes (placements) over the whole solve; 0 = unlimited. Unlike
  // the time limit this gives the same answer on every machine.
  std::uint64_t node_limit = 0;

  // Searches racing on the problem, each on its own thread (1: the calling
  // thread alone; 0: one per hardware thread; at most kMaxSolverThreads).
  // Each searches its own copy of the problem in its own buffer order (the
  // canonical order, or one shuffled from the search's number), and they
  // share the lowest plan height and the highest proven bound; minimising,
  // every second one restarts by weights (WeightedRestartsPortfolio). All
  // stop once one proves the optimum, proves that nothing fits, or (kFit)
  // finds a plan. node_limit is split evenly between them. The answer is
  // the lowest plan, validated like every other; beyond one thread it may
  // differ from run to run.
  unsigned threads = 1;

  // A plan to start from (e.g. a previous solution); used when valid.
  const OffsetsPlan* initial_plan = nullptr;

  // On an infeasible answer, compute an irreducible infeasible subset (a
  // deletion filter; each test gets a share of iis_time_limit_seconds).
  bool compute_iis = false;
  double iis_time_limit_seconds = 10.0;

  // Progress (best height, bound, nodes, elapsed) every progress_interval
  // seconds and once at the end: to stderr, and/or to the callback.
  bool progress_to_stderr = false;
  std::function<void(const SolveProgress&)> on_progress;
  double progress_interval_seconds = 1.0;

  // Polled when the clock is read (every 256 nodes or so): returning true
  // stops the solve as the time limit would (the best plan so far is
  // returned). For Ctrl-C in bindings, or a caller's own cancel flag.
  // With threads > 1 it is called from the calling thread only.
  std::function<bool()> should_stop;

  // How the search goes about it (solver_tuning.h): the defaults are the
  // best general choice; change them to study the search, not to ask a
  // different question.
  SolverTuning tuning;
};

inline constexpr unsigned kMaxSolverThreads = 256;

struct SolveResult {
  SolveStatus status = SolveStatus::kUnknown;
  // The best plan found (validated). For kOptimal/kFeasible it fits in the
  // capacity; with kUnknown it may be a heuristic plan above the capacity
  // (has_plan tells whether there is one at all).
  bool has_plan = false;
  OffsetsPlan plan;
  std::uint64_t height = 0;       // plan.total when has_plan
  std::uint64_t lower_bound = 0;  // proven: no plan is smaller
  // The highest lower bound the restriction bound proved on a sub-problem
  // (0 when none ran); lower_bound includes it.
  std::uint64_t restriction_bound = 0;
  // The deep probe (SolverTuning::deep_probe): how many ran, and of them
  // how many lowered the best plan and how many raised the bound (to judge
  // whether it pays on a family of problems; its nodes are in `nodes`).
  std::uint64_t deep_probes = 0;
  std::uint64_t deep_probe_plans = 0;
  std::uint64_t deep_probe_proofs = 0;
  // The relay probe (SolverTuning::relay_probe): the merged problem's
  // buffer count and the height of its plan (0 when it did not run or found
  // none; its nodes are in `nodes`).
  std::size_t relay_buffers = 0;
  std::uint64_t relay_height = 0;
  // Relay samples (SolverTuning::relay_samples): how many ran, and how many
  // lowered the best plan.
  std::uint64_t relay_samples = 0;
  std::uint64_t relay_sample_plans = 0;
  // SolverTuning::fit_descent: the descent's turns beside the fit question,
  // and how many of them ended with a plan within the capacity (0 or 1 per
  // solve; racing, summed over the searches).
  std::uint64_t fit_descent_turns = 0;
  std::uint64_t fit_descent_plans = 0;
  // SolverTuning::weighted_share: the weighted restarts had their turn
  // after the portfolio (the counts above and `nodes` are of both).
  bool weighted_turn = false;
  // (height - lower_bound) / height; 0 when optimal, 1 without a plan.
  double gap = 1.0;
  double seconds = 0;
  std::uint64_t nodes = 0;
  std::size_t partitions = 0;  // independent time partitions after presolve
  // Searches that raced (SolverParams::threads, 0 resolved); nodes and the
  // probes' counts are of all of them.
  unsigned threads = 1;
  // Height of the best heuristic plan the search started from; none when no
  // heuristic ran (an answer before them, or a start plan without them). A
  // plan of zero-byte buffers has height 0, so 0 could not say "none".
  std::optional<std::uint64_t> heuristic_height;
  // Why the answer is infeasible or unknown, in words.
  std::string reason;
  // kInfeasible with compute_iis: buffer indices (ascending) of a subset that
  // alone does not fit; irreducible when every test of the filter answered.
  std::vector<std::size_t> infeasible_subset;
  bool subset_irreducible = false;
};

// Errors only for bad input (CheckProblem, alignment 0, kFit without a
// capacity, a negative or NaN limit); infeasibility is a status.
Result<SolveResult> SolveOffsets(const Problem& problem, const SolverParams& params = {});

}  // namespace tensormem
