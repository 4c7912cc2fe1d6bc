// SPDX-License-Identifier: Apache-2.0
// How the exact solver searches: the knobs behind SolverParams::tuning.
//
// SolverParams (solver.h) holds what a user decides (the goal, the
// capacity, the limits, threads, a start plan, IIS); SolverTuning holds how
// the search goes about it. Every default is the best general choice we
// measured; change one to study the search on a family of problems, not to
// answer a question. Each knob has one name, used by the C++ field, the
// CLI's `solve --tuning KEY=VALUE` and Python's `solve(tuning={KEY: VALUE})`,
// and one table (TuningKeys) that the help text, the errors and the Python
// binding read. docs/design/solver.md explains the search they tune.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensormem/status.h"

namespace tensormem {

// Static order among buffers that can go to the same place.
enum class CanonicalOrder {
  kLongestFirst,  // longest lifetime, then largest area, then largest size
  kLargestFirst,  // largest size, then longest lifetime
  kAreaFirst,     // largest size x lifetime, then longest lifetime
  kTotalFirst,    // highest live bytes during its lifetime, then longest, then largest
};

// How a search node branches (every choice gives a complete search; they
// differ, a lot, in how soon they find a plan on a given problem):
enum class Branching {
  kLowest,      // any buffer at the lowest offset, in static order, or none more there
  kLeftPoint,   // which buffer covers the leftmost open time section at that offset, or none
  kRightPoint,  // the same from the rightmost section
  // kLowest, and a buffer whose skyline offset is below the level may float
  // at the level (MiniMalloc's rule: more plans, often found sooner).
  kLowestFloating,
  // kLeftPoint with the candidates tried best fit first: those that fill
  // the point's whole run of the skyline at the level and whose top meets a
  // neighbouring floor, then those filling the run, then those meeting the
  // left floor, then the rest (static order within each). For tightly
  // packed problems (zero slack).
  kLeftFit,
};

struct SearchConfig {
  Branching branching = Branching::kLowest;
  CanonicalOrder order = CanonicalOrder::kLongestFirst;
  // Restarts: the search is run for short budgets (a Luby sequence times a
  // few nodes per buffer), each time with the static order shuffled anew
  // (deterministic seeds). Zero-slack problems have heavy-tailed search
  // times: a run either finds a plan in about one node per buffer or gets
  // lost, and which depends on the order. Still complete: a run that
  // finishes without a plan is a proof.
  bool restarts = false;
  // With restarts: each run after the first orders the buffers by where the
  // runs before it failed (constraint programming's weighted degree,
  // dom/wdeg): every failed check of a time section (capacity, section
  // stack, release stack) adds one to the weight of the sections it names,
  // the weights decay by SolverTuning::restart_weight_decay per run and
  // carry over from one capacity to the next, and a buffer weighs the sum
  // over the sections it spans; heaviest first, ties in `order`. Where the
  // hardness is fragmentation away from the peak, that learns which buffers
  // to place early. Still complete: only the static order changes.
  bool weighted = false;

  bool operator==(const SearchConfig&) const = default;
};

// How minimise picks the heights it probes (each probe: does every
// partition fit under the height, within a node budget?).
enum class MinimizeSearch {
  // Below the best plan: probe best - step (the first step 1/64 of the
  // gap). After a plan the step doubles; after descent_probe_nodes at one
  // height without a plan (or a proof that none fits there) it halves, down
  // to just below the best plan, where the probes go on until the limits
  // (the fit question one step down, its searches kept from probe to probe).
  kDescent,
  // Bisection between the proven bound and the best plan, soft-failed
  // targets skipped, the budget quadrupled when the soft range meets the
  // best plan.
  kBisection,
};

// The configurations the solver runs side by side (in slices of nodes): any
// one finishing its search answers the question.
std::vector<SearchConfig> DefaultPortfolio();
// Weighted restarts alone (kLowest, kLongestFirst, SearchConfig::weighted):
// all the nodes go to the search that learns from its failures. Not a
// member of the default portfolio: shared out among its searches it gets
// too few runs to learn. Minimise gives it the rest of the time after the
// portfolio instead (SolverTuning::weighted_share).
std::vector<SearchConfig> WeightedRestartsPortfolio();

// The search's knobs, with their defaults. Ranges are checked by
// CheckTuning (SolveOffsets refuses a tuning outside them).
struct SolverTuning {
  // --- Presolve and pruning (each keeps the search complete) ---
  // Split into time partitions no buffer crosses and solve them apart.
  bool decompose = true;
  // Split again during the search when placed buffers leave a cut.
  bool dynamic_decomposition = true;
  // Put buffers that span a whole partition at its bottom (plain problems).
  bool full_span_reduction = true;
  // Prune when a time section cannot hold what remains above its floor.
  bool section_inference = true;
  // With fixed buffers: per section, the unplaced buffers above each
  // release must fit in the holes the fixed buffers leave there that are at
  // least as large as the smallest of them (see skyline_search.h).
  bool hole_inference = true;
  // Prune partial solutions a lower buffer could drop into (dominated).
  bool dominance = true;
  // Prune when the buffers that can still go to the current level cannot
  // tile the sections with zero slack left (plain problems).
  bool tiling_inference = true;
  // Zero-slack partitions (the same live bytes in every time section, as in
  // perfect packings) also run the time sweep, forwards and backwards, side
  // by side with the portfolio (about two thirds of the time), and two
  // more pairs with other pairing orders once the first has stalled.
  bool time_sweep = true;

  // --- The searches ---
  // Search configurations, run side by side: each in turn continues its own
  // search for portfolio_slice_nodes nodes.
  std::vector<SearchConfig> portfolio = DefaultPortfolio();
  std::uint64_t portfolio_slice_nodes = 1024;
  // Weighted restarts (SearchConfig::weighted): the factor a section's
  // failure weight keeps from one run to the next, in [0, 1] (0 keeps only
  // the last run's failures), and the length of their runs against other
  // restarting configurations' (in (0, 16]).
  double restart_weight_decay = 0.2;
  double weighted_run_scale = 0.5;
  // Minimise with a finite time limit and the default portfolio, on one
  // thread: when the portfolio has not proven the optimum within (1 -
  // weighted_share) of the limit, the rest of the time goes to
  // WeightedRestartsPortfolio, starting from the best plan. The two
  // searches prove different problems; in turn they prove more than either
  // alone. In [0, 1); 0: the portfolio alone.
  double weighted_share = 0.5;
  // Memory for the searches' paths (trails, frames, nogood memos) of one
  // partition, its kept searches together (> 0): past it the largest other
  // search is dropped (it starts over on its turn), and a search that alone
  // needs more stops for good at that height, so the solve's memory stays
  // bounded on traces of 10^5 buffers and more. When every search has
  // stopped so, the height is given up as if its budget were spent.
  std::uint64_t search_memory_bytes = std::uint64_t{32} << 20;
  // Start from the best heuristic plan (PlanOffsets kBest).
  bool heuristic_incumbent = true;

  // --- Minimise: which heights are probed ---
  MinimizeSearch minimize_search = MinimizeSearch::kDescent;
  // Node budget of one probe (all partitions and configurations together);
  // with kBisection it quadruples each time the bisection restarts. Small
  // probes try many heights early.
  std::uint64_t probe_node_budget = std::uint64_t{1} << 14;
  // kDescent: nodes spent at one height before the step towards it halves
  // (probes there run probe_node_budget nodes at a time, each continuing
  // the previous one).
  std::uint64_t descent_probe_nodes = std::uint64_t{1} << 17;
  // kDescent: first ask the proven bound itself, one slice (at least one
  // dive) per configuration: when the optimum is the bound, some
  // configuration often reaches it in one dive, where the descent from the
  // best plan, led by the configuration that found the last plan, may not.
  bool bound_probe = true;
  // kDescent: once the descent has spent descent_probe_nodes at one height
  // without a plan, every descent probe is followed by a deep probe of the
  // restarting configurations (SearchConfig::restarts) alone, with
  // deep_probe_weight times its budget, at the proven bound plus
  // 1/deep_probe_divisor of the gap. Their runs sample plans at random
  // orders, and the chance that a run fits can hardly depend on the height
  // near the bound, while the descent only asks just below its best plan.
  // The deep probe keeps its own searches (with a quarter of
  // search_memory_bytes more). Both > 0.
  bool deep_probe = true;
  std::uint64_t deep_probe_divisor = 16;
  std::uint64_t deep_probe_weight = 4;

  // --- A capacity above the proven bound ---
  // Both goals ask for a plan within the capacity first: the fit question
  // at the capacity takes turns with the descent (kDescent, its bound probe
  // and deep probes included), which stops once its plan fits. The
  // descent's turns are fit_descent_nodes nodes and fit_descent_share of the
  // nodes (the fit question's turns are the rest; its turn comes first).
  // The probe at the capacity keeps its own searches, so it stays complete;
  // the descent, which begins at the bound, often reaches a plan below the
  // capacity first, where the searches with slack prune least.
  // fit_descent_nodes > 0, fit_descent_share in (0, 1).
  bool fit_descent = true;
  std::uint64_t fit_descent_nodes = std::uint64_t{1} << 15;
  double fit_descent_share = 0.25;

  // --- Minimise: bounds from sub-problems ---
  // The restriction bound. A subset of the buffers needs no more height
  // than all of them, so a lower bound proven on a sub-problem is one of
  // the whole. The subsets are the buffers live in time windows around the
  // highest load points (lifetimes kept whole), each minimised by a nested
  // solve of at most restriction_node_budget nodes (counted in node_limit),
  // one window between two probes while the windows have spent no more
  // nodes than the probes, at most restriction_windows windows, skipped
  // when a window holds more than restriction_max_buffers buffers or all of
  // them. Off by default: it rarely proves more than the peak and costs up
  // to half the nodes; on for problems whose hard part is local in time.
  bool restriction_bound = false;
  std::uint64_t restriction_node_budget = std::uint64_t{1} << 14;
  std::uint64_t restriction_windows = 16;
  std::uint64_t restriction_max_buffers = 1024;

  // --- Plans from a merged problem ---
  // The relay probe (solver/relay.h), once per solve: in the fit question
  // once the search has spent relay_after_nodes, else in the descent at its
  // first stall once the solve has spent relay_after_nodes, the problem
  // with its relay chains merged (a buffer starting at the first start
  // after one of the same size and alignment ends takes its place) is
  // minimised by a nested solve given relay_share of the remaining time and
  // node limits and at most relay_node_budget nodes (counted in
  // node_limit); its plan becomes the incumbent where better. It is a
  // restriction: its plans count, its bounds do not. The wait lets problems
  // the descent finishes early never pay for it. Skipped above
  // relay_max_buffers buffers (the merged copy would double the memory).
  // relay_share in (0, 1], relay_node_budget > 0.
  bool relay_probe = true;
  double relay_share = 0.25;
  std::uint64_t relay_node_budget = std::uint64_t{1} << 19;
  std::uint64_t relay_after_nodes = std::uint64_t{1} << 20;
  std::uint64_t relay_max_buffers = std::uint64_t{1} << 16;
  // Relay samples (with relay_probe, minimise with kDescent): at each later
  // stall, while the relay probe and the samples have spent at most half of
  // the solve's nodes, the merged problem is asked to fit at a height in the
  // upper half of the gap below the best plan (a golden-ratio sequence, no
  // height twice at one budget; when every height drawn was asked, the
  // budget doubles) by a nested solve of at most relay_sample_nodes nodes and
  // relay_share of the remaining time; a plan becomes the incumbent where
  // better. relay_sample_nodes > 0.
  bool relay_samples = true;
  std::uint64_t relay_sample_nodes = std::uint64_t{1} << 18;
};

// InvalidArgument naming the first knob outside its range.
Status CheckTuning(const SolverTuning& tuning);

// One knob as the CLI and Python name it: the table behind `--tuning`'s
// help, its errors and Python's `tuning=` keyword.
struct TuningKey {
  std::string_view name;   // the SolverTuning field's name
  std::string_view value;  // what it takes: "true|false", "N", "0..1", ...
  std::string_view help;   // one line
  Status (*set)(SolverTuning& tuning, std::string_view text);
  std::string (*get)(const SolverTuning& tuning);
};

std::span<const TuningKey> TuningKeys();
// Sets the knob `key` from its text (booleans true/false/1/0/on/off,
// integers in decimal, fractions as decimals, choices by name).
// InvalidArgument naming the key (and the known keys, when unknown) or the
// value.
Status SetTuning(SolverTuning& tuning, std::string_view key, std::string_view value);
// "KEY=VALUE" as the CLI takes it.
Status SetTuning(SolverTuning& tuning, std::string_view assignment);
// Every key, its values and its line of help, one per line (for --help).
std::string TuningHelp();

}  // namespace tensormem
