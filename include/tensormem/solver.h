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
// proven lower bound and gap. Deterministic for a given input and node limit
// (time only decides when to stop). docs/design/solver.md says how it works.
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

// Static order among buffers that can go to the same place.
enum class CanonicalOrder {
  kLongestFirst,  // longest lifetime, then largest area, then largest size
  kLargestFirst,  // largest size, then longest lifetime
  kAreaFirst,     // largest size x lifetime, then longest lifetime
  kTotalFirst,    // highest live bytes during its lifetime, then longest, then largest
};

// How a search node branches (every choice gives a complete search; they
// differ, a lot, in how soon they find a plan on a given instance):
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
  // the weights decay by SolverParams::restart_weight_decay per run and
  // carry over from one capacity to the next, and a buffer weighs the sum
  // over the sections it spans; heaviest first, ties in `order`. Where the
  // hardness is fragmentation away from the peak, that learns which buffers
  // to place early (MiniMalloc J: its optimum proven in under 20 s, against
  // 1.83 % above it at 60 s for the portfolio; docs/design/solver.md). Still
  // complete: only the static order changes.
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
  // best plan (the previous default).
  kBisection,
};

// The configurations the solver runs side by side (in slices of nodes): any
// one finishing its search answers the question.
std::vector<SearchConfig> DefaultPortfolio();
// Weighted restarts alone (kLowest, kLongestFirst, SearchConfig::weighted):
// all the nodes go to the search that learns from its failures. Not a
// member of the default portfolio: shared out among its searches it gets
// too few runs to learn, and other instances lose (docs/design/solver.md,
// "Weighted restarts"). Minimise gives it the rest of the time after the
// portfolio instead (SolverParams::weighted_share).
std::vector<SearchConfig> WeightedRestartsPortfolio();

struct SolveProgress {
  std::uint64_t best_height = 0;  // meaningful when has_plan
  bool has_plan = false;
  std::uint64_t lower_bound = 0;
  std::uint64_t nodes = 0;
  double seconds = 0;
};

// Every knob of the solver, with its default.
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
  // least as large as the smallest of them (see skyline_search.h). Filling
  // the holes around fixed buffers: MiniMalloc J with the 270 longest-lived
  // buffers of a plan fixed, 0.04 s against unknown at 10 s (11.3 M nodes).
  bool hole_inference = true;
  // Prune partial solutions a lower buffer could drop into (dominated).
  bool dominance = true;
  // Prune when the buffers that can still go to the current level cannot
  // tile the sections with zero slack left (plain problems; see
  // docs/design/solver.md).
  bool tiling_inference = true;
  // Zero-slack partitions (the same live bytes in every time section, as in
  // perfect packings) also run the time sweep, forwards and backwards, side
  // by side with the portfolio (about two thirds of the time), and two
  // more pairs with other pairing orders once the first has stalled.
  // See docs/design/solver.md.
  bool time_sweep = true;
  // Search configurations, run side by side: each in turn continues its own
  // search for portfolio_slice_nodes nodes.
  std::vector<SearchConfig> portfolio = DefaultPortfolio();
  std::uint64_t portfolio_slice_nodes = 1024;
  // Weighted restarts (SearchConfig::weighted): the factor a section's
  // failure weight keeps from one run to the next, in [0, 1] (checked; 0
  // keeps only the last run's failures), and the length of their runs
  // against other restarting configurations' (in (0, 16], checked).
  // MiniMalloc J minimised for 60 s with WeightedRestartsPortfolio: decay
  // 0.2 and runs of half length prove its optimum (the peak) in 23 s;
  // decay 0.2 with full runs ends at 994,304, 0.5 at 999,424
  // (docs/design/solver.md, "Weighted restarts").
  double restart_weight_decay = 0.2;
  double weighted_run_scale = 0.5;
  // Minimise with a finite time limit and the default portfolio, on one
  // thread: when the portfolio has not proven the optimum within (1 -
  // weighted_share) of the limit, the rest of the time goes to
  // WeightedRestartsPortfolio, starting from the best plan. Neither search
  // finishes all eleven MiniMalloc challenging instances within 60 s (the
  // portfolio: J 1.83 % above its bound; the weighted search: D 1.25 %),
  // the two in turn prove all eleven optimal (docs/design/solver.md). In [0, 1)
  // (checked); 0: the portfolio alone.
  double weighted_share = 0.5;
  // Minimise: node budget of the first probes (all partitions and
  // configurations together); it quadruples each time the bisection
  // restarts. Small first probes let the bisection try many heights early
  // (J at 60 s: 2^14 reaches 1,029,120, 2^17 1,041,408; C and D the same).
  std::uint64_t probe_node_budget = std::uint64_t{1} << 14;
  MinimizeSearch minimize_search = MinimizeSearch::kDescent;
  // kDescent: nodes spent at one height before the step towards it halves
  // (probes there run probe_node_budget nodes at a time, each continuing
  // the previous one).
  std::uint64_t descent_probe_nodes = std::uint64_t{1} << 17;
  // kDescent: first ask the proven bound itself, one slice (at least one
  // dive) per configuration; when the optimum is the bound, some
  // configuration often reaches it in one dive (resnet18_train_b8: the
  // second, 19,911 nodes), which the descent from the best plan, led by the
  // configuration that found the last plan, did not reach within 60 s.
  bool bound_probe = true;
  // A capacity above the proven bound (both goals ask for a plan within it
  // first): the fit question at the capacity takes turns with the descent
  // (kDescent, its bound probe and deep probes included), which stops once
  // its plan fits. The descent's turns are fit_descent_nodes nodes and
  // fit_descent_share of the nodes (the fit question's turns are the rest;
  // its turn comes first). The probe at the capacity keeps its own
  // searches, so it stays complete (a proof that nothing fits) at its share
  // of the nodes; the descent, which begins at the bound,
  // often reaches a plan below the capacity first, where the searches with
  // slack prune least: MiniMalloc J's 374 buffers of 3 KiB and more fit
  // 993,280 bytes in 845,509 nodes (the descent's plan at their bound,
  // 985,088), against 1,153,681 for the fit question alone, and an answer
  // still unknown at the limit carries the descent's plan (docs/design/solver.md).
  // A fit found within the fit question's first turn is unchanged; the
  // others take about 1 / (1 - fit_descent_share) times the nodes, and more
  // where a descent turn overruns (it ends between probes, and a relay
  // sample or deep probe may follow the last): 1.06-1.52x was measured on
  // 47 fit questions, against 0.51x and 0.55x where the descent answered
  // first (docs/design/solver.md).
  // fit_descent_nodes > 0, fit_descent_share in (0, 1) (checked). Off:
  // `solve --no-fit-descent`, Python's solve(fit_descent=False).
  bool fit_descent = true;
  std::uint64_t fit_descent_nodes = std::uint64_t{1} << 15;
  double fit_descent_share = 0.25;
  // kDescent: once the descent has spent descent_probe_nodes at one height
  // without a plan, every descent probe is followed by a deep probe of the
  // restarting configurations (SearchConfig::restarts) alone, with
  // deep_probe_weight times its budget, at the proven bound plus
  // 1/deep_probe_divisor of the gap. Their runs sample plans at random
  // orders; on MiniMalloc D the chance that a run fits hardly depends on
  // the height between 0.1 % and 2 % above the bound, while the descent
  // only asks just below its best plan (docs/design/solver.md), and once stalled
  // rarely gains more than a granule: hence the weight (D reaches 0.10 %
  // at 5.05 M nodes with 4, 6.49 M with 1; with 8 at 3.96 M, but J ends a
  // granule higher at 60 s). The deep probe keeps its own searches (with a
  // quarter of search_memory_bytes more), so neither probe throws the
  // other's away. deep_probe_divisor > 0 and deep_probe_weight > 0 (checked).
  bool deep_probe = true;
  std::uint64_t deep_probe_divisor = 16;
  std::uint64_t deep_probe_weight = 4;
  // Memory for the searches' paths (trails, frames, nogood memos) of one
  // partition, its kept searches together (> 0): past it the largest other
  // search is dropped (it starts over on its turn), and a search that alone
  // needs more stops for good at that height, so the solve's memory stays
  // bounded (a 336,250-buffer trace trails megabytes per placement and grew
  // to 1.6 GB in 2,000 nodes). The other configurations go on; when every
  // one has stopped so, the height is given up as if its budget were spent.
  std::size_t search_memory_bytes = std::size_t{32} << 20;
  // Minimise: the restriction bound. A subset of the buffers needs no more
  // height than all of them (dropping buffers only drops constraints), so a
  // lower bound proven on a sub-problem is one of the whole. The subsets
  // are the buffers live in time windows around the highest load points
  // (lifetimes kept whole), each minimised by a nested solve of at most
  // restriction_node_budget nodes (counted in node_limit), one window
  // between two probes while the windows have spent no more nodes than the
  // probes, at most restriction_windows windows, skipped when a window
  // holds more than restriction_max_buffers buffers or all of them.
  // Off by default: on the MiniMalloc set and the shared traces no window
  // proved more than the peak, and the windows cost up to half the nodes
  // (docs/design/solver.md); on for problems whose hard part is local in time.
  bool restriction_bound = false;
  std::uint64_t restriction_node_budget = std::uint64_t{1} << 14;
  std::size_t restriction_windows = 16;
  std::size_t restriction_max_buffers = 1024;
  // The relay probe (solver/relay.h), once per solve: in the fit question
  // (the fit goal, or a capacity above the first plan) once the search has
  // spent relay_after_nodes, else in the descent (kDescent) at its first
  // stall (descent_probe_nodes at one height) once the solve has spent
  // relay_after_nodes, the problem with its relay chains
  // merged (a buffer starting at the first start after one of the same
  // size and alignment ends takes its place) is minimised by a nested solve given
  // relay_share of the remaining time and node limits and at most
  // relay_node_budget nodes (counted in node_limit); its plan becomes the
  // incumbent where better. It is a restriction: its plans count, its
  // bounds do not. The wait: problems the descent finishes early never pay
  // for it (MiniMalloc G and H, whose merged problems are much harder: 0.96
  // M and > 2 M nodes against 1.8 k and 4.4 k), and the descent's own early
  // plans come first (on J a merged plan adopted at the first stall, 0.7 %
  // above the descent's later ones, led it to 1,028,096 instead of
  // 1,022,976 at 3 M nodes). On MiniMalloc D the merged problem (174
  // buffers of 213) is solved at D's peak in 0.33 M nodes, where the search
  // of D itself ends 0.1-2 % above it at 60 s. Skipped above
  // relay_max_buffers buffers (the merged copy and its nested solve would
  // double the memory of a large trace). relay_share in (0, 1],
  // relay_node_budget > 0 (checked).
  bool relay_probe = true;
  double relay_share = 0.25;
  std::uint64_t relay_node_budget = std::uint64_t{1} << 19;
  std::uint64_t relay_after_nodes = std::uint64_t{1} << 20;
  std::size_t relay_max_buffers = std::size_t{1} << 16;
  // Relay samples (with relay_probe, minimise with kDescent): at each later
  // stall, while the relay probe and the samples have spent at most half of
  // the solve's nodes, the merged problem is asked to fit at a height in the
  // upper half of the gap below the best plan (a golden-ratio sequence, no
  // height twice at one budget; when every height drawn was asked, the
  // budget doubles) by a nested solve of at most relay_sample_nodes nodes and
  // relay_share of the remaining time; a plan becomes the incumbent where
  // better. Which heights fit within a budget is luck (MiniMalloc J: about
  // half of those 1-3 % above the bound at 2^19 nodes, where the descent of
  // J itself stalls 3.3 % above it; docs/design/solver.md). relay_sample_nodes > 0
  // (checked).
  bool relay_samples = true;
  std::uint64_t relay_sample_nodes = std::uint64_t{1} << 18;
  // Start from the best heuristic plan (PlanOffsets kBest).
  bool heuristic_incumbent = true;
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

  // Searches racing on the problem, each on its own thread (1: the calling
  // thread alone; 0: one per hardware thread; at most kMaxSolverThreads).
  // The first searches the buffers in the problem's order, search k > 0 in
  // an order shuffled from seed k (the same with every standard library).
  // Minimising with the default portfolio, the odd searches run
  // WeightedRestartsPortfolio() instead, search 1 in the problem's order
  // (two searches prove MiniMalloc J optimal in 19.4 s on two cores; without
  // a race it takes the weighted turn, 46.6 s). The order breaks the
  // searches' ties, and on hard instances results spread widely between
  // orders (MiniMalloc J at 60 s: 1.43-2.91 % above its bound over six
  // orders). They share the
  // lowest plan height and the highest proven bound: searches 1.. descend
  // below the lowest plan of any, search 0 keeps its own descent (so a race
  // searches at least as well as one thread, on a busier machine), and all
  // stop once one proves the optimum, proves that nothing fits, or (kFit)
  // finds a plan. node_limit is split evenly
  // between them, and each holds its own copy of the problem and its own
  // search memory. The answer is the lowest plan, validated like every
  // other; beyond one thread it may differ from run to run.
  unsigned threads = 1;
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
  // The deep probe (SolverParams::deep_probe): how many ran, and of them
  // how many lowered the best plan and how many raised the bound (to judge
  // whether it pays on a family of problems; its nodes are in `nodes`).
  std::uint64_t deep_probes = 0;
  std::uint64_t deep_probe_plans = 0;
  std::uint64_t deep_probe_proofs = 0;
  // The relay probe (SolverParams::relay_probe): the merged problem's
  // buffer count and the height of its plan (0 when it did not run or found
  // none; its nodes are in `nodes`).
  std::size_t relay_buffers = 0;
  std::uint64_t relay_height = 0;
  // Relay samples (SolverParams::relay_samples): how many ran, and how many
  // lowered the best plan.
  std::uint64_t relay_samples = 0;
  std::uint64_t relay_sample_plans = 0;
  // SolverParams::fit_descent: the descent's turns beside the fit question,
  // and how many of them ended with a plan within the capacity (0 or 1 per
  // solve; racing, summed over the searches).
  std::uint64_t fit_descent_turns = 0;
  std::uint64_t fit_descent_plans = 0;
  // SolverParams::weighted_share: the weighted restarts had their turn
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
