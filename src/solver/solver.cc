// SPDX-License-Identifier: Apache-2.0
// SolveOffsets: the orchestration around the engines (Solve::Run's phases).
//
// 0. The buffers are put in the canonical order (canonical_order.h), so the
//    answer depends on the problem alone; the plan is mapped back at the end.
// 1. Presolve (instance.h): trivial placements, obstacles, independent time
//    partitions, full-span reduction. Quick proofs of infeasibility: a
//    buffer or fixed buffer above the capacity, overlapping fixed buffers,
//    peak live bytes above the capacity.
// 2. Incumbents: the best heuristic on the whole problem (kBest's heuristic
//    part, or SolverParams::initial_plan when better) and the same heuristic on
//    each partition with a base; the arena is the highest partition.
// 3. A capacity (kFit, or kMinimize within one): the partitions above it
//    are probed at the capacity with no budget but the solve's limits; with
//    slack above the proven bound (SolverTuning::fit_descent) in turns with
//    the descent below, whose plan within the capacity is an answer too.
// 4. kMinimize: the descent (SolverTuning::minimize_search, kDescent by
//    default): first a probe at the proven bound itself, then probes at the
//    best plan minus a step that doubles after each plan and halves after
//    descent_probe_nodes at one height without one, down to one granule
//    below the best plan, where the fit question goes on until the limits.
//    A probe asks every partition above the target to fit under it within a
//    node budget; a plan lowers the best, a finished search raises the
//    proven bound. When the descent stalls: the relay probe and samples
//    (relay.h: plans of the problem with its relay chains merged), the deep
//    probe (the restarting searches near the bound), and between probes the
//    restriction bound when asked for. Minimising with a finite limit on one
//    thread, weighted restarts take the rest of the time after the portfolio
//    (SolveInTurn); with threads, searches race (race.h). kBisection, the
//    alternative, bisects between the bound and the best plan.
// 5. The plan is assembled and checked by ValidateOffsetsPlan; an
//    infeasible answer can carry an irreducible infeasible subset (iis.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "core/checked_math.h"
#include "planning/offsets/offsets_strategies.h"
#include "solver/canonical_order.h"
#include "solver/iis.h"
#include "solver/instance.h"
#include "solver/portfolio.h"
#include "solver/race.h"
#include "solver/relay.h"
#include "solver/search_control.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"
#include "tensormem/solver.h"
#include "tensormem/validator.h"

namespace tensormem {

std::string_view Name(SolveStatus status) {
  switch (status) {
    case SolveStatus::kOptimal: return "optimal";
    case SolveStatus::kFeasible: return "feasible";
    case SolveStatus::kInfeasible: return "infeasible";
    case SolveStatus::kUnknown: return "unknown";
  }
  return "unknown";
}

namespace {

using solver::Instance;
using solver::PartitionSolver;
using solver::SearchControl;
using solver::SearchOutcome;

struct Part {
  const Instance* inst = nullptr;
  std::unique_ptr<PartitionSolver> solver;
  // The deep probe's (SolverParams::deep_probe), made on its first turn.
  std::unique_ptr<PartitionSolver> deep;
  // The fit question's beside the descent (SolverParams::fit_descent),
  // made on its first turn: kept at the capacity while the descent moves.
  std::unique_ptr<PartitionSolver> fit;
  std::vector<std::uint64_t> offsets;  // per item
  std::uint64_t height = 0;
  bool has_plan = false;
};

std::uint64_t TopOf(const Problem& problem, const std::vector<std::uint64_t>& offsets) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i)
    if (problem.buffers[i].size > 0) total = std::max(total, offsets[i] + problem.buffers[i].size);
  return total;
}

// How long the heuristics may take, and who may stop them: they run under
// the solve's own limit (kDeadlineExceeded when they cannot finish).
struct HeuristicLimit {
  double seconds;  // PlanParams::time_limit_seconds
  std::function<bool()> should_stop;
};

// The best heuristic plan (PlanOffsets kBest), without kBest's exact polish:
// the search that follows does that work, under the solve's own limits.
// Planned by the planning layer directly: the dispatcher sits above the
// solver, since kBest and kExact are built on it.
Result<OffsetsPlan> BestHeuristic(const Problem& problem, std::uint64_t alignment,
                                  const HeuristicLimit& limit) {
  PlanParams pp;
  pp.alignment = alignment;
  pp.time_limit_seconds = limit.seconds;
  pp.should_stop = limit.should_stop;
  TM_ASSIGN_OR_RETURN(OffsetsPlan plan,
                      planning::RunOffsetsStrategy(problem, "best", planning::BestHeuristicOffsets, pp,
                                                   /*reports_peak=*/true));
  plan.strategy = "best(" + plan.strategy + ")";
  return plan;
}

// The heuristic plan of one partition: its buffers (and obstacles, fixed)
// planned alone, lifted by the partition's base.
Status PartHeuristic(const Problem& problem, std::uint64_t alignment, const HeuristicLimit& limit,
                     Part* part) {
  const Instance& inst = *part->inst;
  Problem sub;
  for (const solver::Item& it : inst.items) sub.buffers.push_back(problem.buffers[it.buffer]);
  for (std::size_t f : inst.obstacle_buffers) sub.buffers.push_back(problem.buffers[f]);
  TM_ASSIGN_OR_RETURN(OffsetsPlan plan, BestHeuristic(sub, alignment, limit));
  part->offsets.resize(inst.items.size());
  part->height = inst.base;
  for (std::size_t k = 0; k < inst.items.size(); ++k) {
    part->offsets[k] = plan.offsets[k] + inst.base;  // base > 0 only without obstacles
    part->height = std::max(part->height, part->offsets[k] + inst.items[k].height);
  }
  part->has_plan = true;
  return Status::Ok();
}

class Solve {
 public:
  Solve(const Problem& problem, const SolverParams& params, std::optional<std::uint64_t> capacity,
        solver::RaceShared* race = nullptr, bool follow_frontier = false)
      : problem_(problem),
        params_(params),
        capacity_(capacity),
        control_(params.time_limit_seconds, params.node_limit, params.progress_to_stderr,
                 params.on_progress, params.progress_interval_seconds),
        race_(race),
        follow_frontier_(race != nullptr && follow_frontier),
        shown_limit_(params.time_limit_seconds) {
    if (race_ == nullptr) {
      control_.SetShouldStop(params.should_stop);
    } else {
      control_.SetShouldStop([race, stop = params.should_stop] {
        if (race->done.load(std::memory_order_relaxed)) return true;
        if (stop && stop()) {
          race->done.store(true);
          return true;
        }
        return false;
      });
    }
    deep_params_ = params;
    deep_params_.tuning.portfolio.clear();
    for (const SearchConfig& config : params.tuning.portfolio)
      if (config.restarts) deep_params_.tuning.portfolio.push_back(config);
    deep_params_.tuning.time_sweep = false;
    deep_params_.tuning.search_memory_bytes = std::max<std::size_t>(params.tuning.search_memory_bytes / 4, 1);
  }

  Result<SolveResult> Run();
  // The time limit the answer's reason names: the caller's, when this solve
  // has a share of it (SolverParams::weighted_share).
  void ShowLimit(double seconds) { shown_limit_ = seconds; }
  // The caller's index of each buffer, for the reasons that name one
  // (canonical_order.h; empty: the problem's own).
  void SetCallerIndex(std::span<const std::size_t> caller) { caller_index_ = caller; }

 private:
  // A phase's end of the solve: its answer, or nullopt to go on.
  using Answer = std::optional<Result<SolveResult>>;
  // Which searches run after the incumbents (ChoosePhases, the one place
  // that decides).
  struct Phases {
    bool fit = false;                 // a plan within the capacity first
    bool fit_beside_descent = false;  // SolverTuning::fit_descent
    bool relay_in_fit = false;        // the relay probe within the fit question alone
    bool sliced_fit = false;          // racing to minimise: fit in slices
    bool minimize = false;
    bool restriction_bound = false;   // SolverTuning::restriction_bound
  };
  Answer RunPresolve();
  Answer QuickProofs();
  Answer FindIncumbents();
  Phases ChoosePhases() const;
  Answer FitWithinCapacity(const Phases& phases);
  SearchOutcome FitAlone(const Phases& phases, std::uint64_t best);
  // The time limit has passed (a finite, positive one).
  bool LimitSpent() const;
  // The limit or the stop request came during the presolve: said so.
  Result<SolveResult> StoppedInPresolve();
  void Infeasible(std::string reason, std::vector<std::size_t> culprits);
  // What is left of the time limit for a heuristic (0 and +infinity kept:
  // untimed, as time_limit_seconds = 0 runs the heuristics only).
  HeuristicLimit Remaining() const;
  // The limit passed before any heuristic plan: an answer without a plan.
  Result<SolveResult> OutOfTime(const Status& why);
  std::uint64_t AssembledHeight() const;
  // This search's best plan: the partitions' assembled, or the whole
  // problem's (heuristic, initial or relay) when lower.
  std::uint64_t OwnBest() const {
    return std::min(AssembledHeight(), global_ ? global_->total : UINT64_MAX);
  }
  std::vector<std::uint64_t> AssembledOffsets() const;
  // The height the descent works below: `own` (this search's best plan),
  // or, following the race's frontier (SolverParams::threads), a racing
  // search's lower plan.
  std::uint64_t Frontier(std::uint64_t own) const {
    return follow_frontier_ ? std::min(own, race_->best.load(std::memory_order_relaxed)) : own;
  }
  void Publish();
  // Which of a part's solvers a probe uses.
  enum class Engine { kOwn, kDeep, kFit };
  // Every partition fits under `target`: kFound, or why not; on
  // kExhausted, *proven is the least height the failing partition can have.
  SearchOutcome TryTarget(std::uint64_t target, std::uint64_t budget, std::uint64_t* proven,
                          Engine engine = Engine::kOwn);
  void Minimize();
  // The descent (MinimizeSearch::kDescent), resumable: each call goes on
  // where the last stopped, until the limits, the bound, `quota` more nodes
  // or (kFit) a plan within the capacity.
  void Descend(std::uint64_t quota = UINT64_MAX);
  // Descend's steps: its start (false: nothing to descend), the probe at
  // the bound, and what runs when it stalls.
  bool StartDescent();
  void ProbeTheBound();
  void DescentStalled();
  // SolverParams::fit_descent: the fit question at the capacity and the
  // descent in turns, until a plan fits, a proof, or the limits.
  SearchOutcome FitBesideDescent();
  // Every search of a partition stopped at `target` for memory
  // (SolverParams::search_memory_bytes): said in the answer.
  void NoteMemory(std::uint64_t target) {
    memory_note_ = "the searches stopped at height " + std::to_string(target) +
                   ": their paths outgrew search_memory_bytes (" +
                   std::to_string(params_.tuning.search_memory_bytes) + " bytes)";
  }
  // The restriction bound (SolverParams::restriction_bound): the windows
  // to try, then one nested minimise per call, between probes.
  void PlanWindows();
  void RestrictionStep();
  // The relay probe (SolverParams::relay_probe): its plan, where better,
  // becomes the whole problem's and the partitions' incumbent.
  void RelayProbe();
  // One relay sample (SolverParams::relay_samples): the merged problem
  // asked to fit at a height of the upper half of the gap.
  void RelaySample();
  // A nested solve of the merged problem (relay_chains_), its progress in
  // the solve's, its nodes counted; nullopt if it could not run.
  std::optional<SolveResult> SolveMerged(SolverParams sp);
  // The merged problem's plan, split back, as the incumbent where it is
  // lower than `best`; true when taken.
  bool AdoptRelayPlan(const OffsetsPlan& merged_plan, std::uint64_t best);
  // A nested solve's parameters (a restriction window, the relay probe and
  // its samples):
  // this solve's, without nested probes, IIS or progress, with at most
  // node_budget nodes and `share` of what is left of the time and node
  // limits. False when nothing is left.
  bool NestedParams(std::uint64_t node_budget, double share, SolverParams* sp) const;
  // The whole problem's plan (global_) restricted to partition `part`
  // (one without a base), when that is lower than the part's own.
  void TakeGlobal(Part* part);
  Result<SolveResult> Finish();

  const Problem& problem_;
  const SolverParams& params_;
  // The deep probe's parameters: the restarting configurations alone, no
  // time sweep, a quarter of the search memory (empty portfolio: no deep
  // probe).
  SolverParams deep_params_;
  std::optional<std::uint64_t> capacity_;
  SearchControl control_;
  solver::RaceShared* race_;  // null unless racing (SolverParams::threads)
  bool follow_frontier_;      // descend below the race's lowest plan
  solver::Presolved presolved_;
  std::vector<Part> parts_;
  std::optional<OffsetsPlan> global_;  // heuristic / initial plan of the whole problem
  std::uint64_t lower_bound_ = 0;
  // The descent's state between calls of Descend.
  struct DescentState {
    bool started = false;
    bool deep = false;  // the deep probe can run
    std::uint64_t ub = 0, step = 0, budget = 0;
    std::uint64_t spent_here = 0;  // nodes spent at the current target
    std::uint64_t last_target = UINT64_MAX;
  };
  DescentState descent_;
  // Restriction bound: task windows [first, last] still to try, and the best
  // bound proven on one.
  std::vector<std::pair<TaskIndex, TaskIndex>> windows_;
  std::size_t next_window_ = 0;
  std::uint64_t restriction_bound_ = 0;
  std::uint64_t restriction_nodes_ = 0;  // spent in the windows' nested solves
  bool relay_pending_ = true;  // the relay probe runs once per solve
  // The merged problem (set by the relay probe when it merges anything),
  // the nodes of its nested solves, the samples drawn, the heights they
  // asked at the current budget (a height asked again with the same
  // budget, the same answer) and that budget (0: relay_sample_nodes).
  std::optional<solver::RelayChains> relay_chains_;
  std::uint64_t relay_nodes_ = 0;
  std::uint64_t relay_draws_ = 0;
  std::set<std::uint64_t> relay_asked_;
  std::uint64_t relay_sample_budget_ = 0;
  SolveResult result_;
  bool infeasible_ = false;
  bool out_of_time_ = false;
  std::vector<std::size_t> culprits_;
  std::string memory_note_;
  std::string general_note_;  // GeneralSearch::exhausted_unproven, said in the answer
  double shown_limit_;
  std::span<const std::size_t> caller_index_;
};

HeuristicLimit Solve::Remaining() const {
  const double limit = params_.time_limit_seconds;
  if (limit <= 0 || limit >= 1e9) return {limit, params_.should_stop};
  return {std::max(limit - control_.Seconds(), 1e-9), params_.should_stop};
}

Result<SolveResult> Solve::OutOfTime(const Status& why) {
  out_of_time_ = true;
  // Named as the caller set it: the heuristics report only what the
  // presolve left them ("2.75 s" of a 6 s solve). The nested deadlines end
  // at the solve's own limit (Remaining()), so before it only the stop
  // request can have stopped them.
  std::string what = "the stop request came";
  if (LimitSpent()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "the time limit of %.3g s was reached", shown_limit_);
    what = buf;
  }
  // The whole problem's heuristic plan, when there is one, is still the answer.
  result_.reason = global_ ? what + " during the partitions' heuristics; the plan is the whole "
                                    "problem's heuristic one (" + why.message() + ")"
                           : what + " before the heuristics found a plan (" + why.message() + ")";
  return Finish();
}

void Solve::Infeasible(std::string reason, std::vector<std::size_t> culprits) {
  infeasible_ = true;
  if (race_) race_->done.store(true);  // the other searches cannot find a plan
  result_.reason = std::move(reason);
  culprits_ = std::move(culprits);
}

std::uint64_t Solve::AssembledHeight() const {
  std::uint64_t h = presolved_.placed_height;
  for (const Part& p : parts_) h = std::max(h, p.height);
  return h;
}

std::vector<std::uint64_t> Solve::AssembledOffsets() const {
  std::vector<std::uint64_t> offsets(problem_.buffers.size(), 0);
  for (const solver::Placement& pl : presolved_.placed) offsets[pl.buffer] = pl.offset;
  for (const Part& p : parts_)
    for (std::size_t k = 0; k < p.inst->items.size(); ++k)
      offsets[p.inst->items[k].buffer] = p.offsets[k];
  return offsets;
}

// The best height so far, for the progress report.
void Solve::Publish() {
  std::uint64_t best = AssembledHeight();
  if (global_) best = std::min(best, global_->total);
  if (race_) {
    // Plans and bounds go both ways; the searches stop once the lowest plan
    // is proven optimal, or (kFit) fits.
    race_->OfferBest(best);
    race_->OfferBound(lower_bound_);
    lower_bound_ = std::max(lower_bound_, race_->bound.load(std::memory_order_relaxed));
    const std::uint64_t lowest = race_->best.load(std::memory_order_relaxed);
    if (lowest <= lower_bound_ || (params_.goal == SolveGoal::kFit && capacity_ && lowest <= *capacity_))
      race_->done.store(true);
  }
  control_.SetBest(true, best);
  control_.SetLowerBound(lower_bound_);
}

SearchOutcome Solve::TryTarget(std::uint64_t target, std::uint64_t budget, std::uint64_t* proven,
                               Engine engine) {
  for (Part& p : parts_) {
    if (p.height <= target) continue;
    if (engine == Engine::kDeep && !p.deep)
      p.deep = std::make_unique<PartitionSolver>(*p.inst, deep_params_);
    if (engine == Engine::kFit && !p.fit) p.fit = std::make_unique<PartitionSolver>(*p.inst, params_);
    PartitionSolver& solver = engine == Engine::kDeep  ? *p.deep
                              : engine == Engine::kFit ? *p.fit
                                                       : *p.solver;
    const SearchOutcome out = solver.Probe(target, budget, control_);
    if (out == SearchOutcome::kLimit && solver.gave_up()) NoteMemory(target);
    if (out == SearchOutcome::kLimit && solver.general_unproven() && general_note_.empty())
      general_note_ = "the bound is the presolve's: a partition has windows above a buffer's offset "
                      "and an alignment above one, where the general engine's search through all "
                      "its candidates proves nothing (general_search.h)";
    if (out == SearchOutcome::kExhausted && proven) *proven = solver.ProvenAbove(target);
    if (out != SearchOutcome::kFound) return out;
    p.offsets = solver.offsets();
    p.height = solver.height();
  }
  return SearchOutcome::kFound;
}

void Solve::Minimize() {
  if (params_.tuning.minimize_search == MinimizeSearch::kDescent) return Descend();
  std::uint64_t ub = OwnBest();
  std::uint64_t soft = lower_bound_;
  std::uint64_t budget = std::max<std::uint64_t>(params_.tuning.probe_node_budget, 1);
  while (!control_.stopped()) {
    ub = Frontier(ub);
    if (ub <= lower_bound_) break;
    if (soft >= ub) {
      soft = lower_bound_;
      budget = budget > UINT64_MAX / 4 ? UINT64_MAX : budget * 4;
    }
    const std::uint64_t target = soft + (ub - 1 - soft) / 2;
    std::uint64_t proven = target + 1;
    const std::uint64_t before = control_.nodes();
    const SearchOutcome out = TryTarget(target, budget, &proven);
    // A probe that cannot spend a node (every search stopped for memory at
    // that height) will not change: leave the rest to the best plan.
    if (out == SearchOutcome::kLimit && !control_.stopped() && control_.nodes() == before) break;
    if (out == SearchOutcome::kFound) {
      ub = std::min(ub, AssembledHeight());
    } else if (out == SearchOutcome::kExhausted) {
      lower_bound_ = std::max(lower_bound_, proven);
      soft = std::max(soft, lower_bound_);
    } else if (!control_.stopped()) {
      soft = target + 1;
    }
    Publish();
    RestrictionStep();
    soft = std::max(soft, lower_bound_);
  }
}

// Descent (galloping from the best plan down): probes just below the best
// plan are fit questions with a little slack taken away, usually answered
// soon; the step doubles after each plan, so the frontier is reached in a
// few probes. A probe out of budget is continued at the same height (the
// partitions keep their searches at one capacity: no work is thrown away)
// until descent_probe_nodes were spent there; then the step halves. Once the
// step is down to one byte (one granule, after rounding) the searches there
// go on until the limits: the fit question just below the best plan.
void Solve::Descend(std::uint64_t quota) {
  DescentState& d = descent_;
  const std::uint64_t first_node = control_.nodes();
  const auto quota_spent = [&] { return control_.nodes() - first_node >= quota; };
  // kFit (beside the fit question): done once the plan fits.
  const auto fits = [&](std::uint64_t ub) {
    return params_.goal == SolveGoal::kFit && capacity_ && ub <= *capacity_;
  };
  if (d.started) {
    // Resumed: the fit question or the relay probe may have lowered the plan.
    d.ub = std::min(d.ub, OwnBest());
  } else if (!StartDescent()) {
    return;
  }
  const std::uint64_t budget = d.budget;
  while (!control_.stopped() && !quota_spent()) {
    d.ub = Frontier(d.ub);
    if (d.ub <= lower_bound_ || fits(d.ub)) break;
    d.step = std::clamp<std::uint64_t>(d.step, 1, d.ub - lower_bound_);
    const std::uint64_t target = d.ub - d.step;
    if (target != d.last_target) d.spent_here = 0;
    d.last_target = target;
    std::uint64_t proven = target + 1;
    const std::uint64_t before = control_.nodes();
    const SearchOutcome out = TryTarget(target, budget, &proven);
    d.spent_here += control_.nodes() - before;
    if (out == SearchOutcome::kFound) {
      d.ub = std::min(d.ub, AssembledHeight());
      d.step = d.step > UINT64_MAX / 2 ? d.step : d.step * 2;
    } else if (out == SearchOutcome::kExhausted) {
      lower_bound_ = std::max(lower_bound_, proven);
      d.step = std::max<std::uint64_t>(d.step / 2, 1);
    } else if (!control_.stopped() && control_.nodes() == before) {
      // Every search stopped for memory at this height, or the general
      // engine searched through it without a proof: a higher one (they start
      // over there), down to one granule below the best plan.
      if (d.step == 1) break;
      d.step = std::max<std::uint64_t>(d.step / 2, 1);
    } else if (!control_.stopped() && d.spent_here >= params_.tuning.descent_probe_nodes) {
      d.step = std::max<std::uint64_t>(d.step / 2, 1);
    }
    if (out == SearchOutcome::kLimit && d.spent_here >= params_.tuning.descent_probe_nodes) DescentStalled();
    Publish();
    RestrictionStep();
  }
}

// The descent's first call: its frontier, step and budget, the bound probe;
// false when nothing is left to descend.
bool Solve::StartDescent() {
  DescentState& d = descent_;
  d.started = true;
  // ub: the frontier (this search's best plan, or a racing search's).
  d.ub = Frontier(OwnBest());
  if (d.ub <= lower_bound_) return false;
  d.step = std::max<std::uint64_t>((d.ub - lower_bound_) / 64, 1);
  d.budget = std::max<std::uint64_t>(params_.tuning.probe_node_budget, 1);
  if (params_.tuning.bound_probe) {
    ProbeTheBound();
    d.ub = Frontier(d.ub);
    if (d.ub <= lower_bound_ || control_.stopped()) return false;
    d.step = std::max<std::uint64_t>((d.ub - lower_bound_) / 64, 1);
  }
  // The deep probe needs a restarting configuration, and partitions the
  // skyline engine searches (the general engine would only start over).
  d.deep = params_.tuning.deep_probe && !deep_params_.tuning.portfolio.empty();
  for (const Part& p : parts_) d.deep = d.deep && !p.inst->needs_general;
  return true;
}

// The bound itself: one slice per configuration (SolverTuning::bound_probe).
void Solve::ProbeTheBound() {
  const SolverTuning& t = params_.tuning;
  std::uint64_t slices = 0;
  for (const Part& p : parts_)
    slices = std::max<std::uint64_t>(
        slices, std::max<std::uint64_t>(
                    {t.portfolio_slice_nodes, 1, t.portfolio_slice_nodes > 1 ? p.inst->items.size() + 1 : 1}));
  const std::uint64_t configs = std::max<std::size_t>(t.portfolio.size(), 1);
  const std::uint64_t budget = slices > UINT64_MAX / configs ? UINT64_MAX : slices * configs;
  std::uint64_t proven = lower_bound_ + 1;
  const SearchOutcome out = TryTarget(lower_bound_, budget, &proven);
  if (out == SearchOutcome::kFound) {
    descent_.ub = std::min(descent_.ub, AssembledHeight());
  } else if (out == SearchOutcome::kExhausted) {
    lower_bound_ = std::max(lower_bound_, proven);
  }
  Publish();
}

// The descent spent descent_probe_nodes at one height without a plan: the
// relay probe's turn (once per solve, after relay_after_nodes), later the
// relay samples', and the deep probe's (SolverTuning).
void Solve::DescentStalled() {
  DescentState& d = descent_;
  if (params_.tuning.relay_probe && control_.nodes() >= params_.tuning.relay_after_nodes &&
      d.ub > lower_bound_ && !control_.stopped()) {
    if (relay_pending_) {
      RelayProbe();
    } else {
      RelaySample();
    }
    d.ub = Frontier(std::min(d.ub, OwnBest()));
  }
  if (!d.deep || d.ub <= lower_bound_ || control_.stopped()) return;
  const std::uint64_t deep_target = lower_bound_ + (d.ub - lower_bound_) / params_.tuning.deep_probe_divisor;
  std::uint64_t deep_proven = deep_target + 1;
  const SearchOutcome deep_out = TryTarget(
      deep_target, internal::SaturatingMul(d.budget, params_.tuning.deep_probe_weight), &deep_proven, Engine::kDeep);
  ++result_.deep_probes;
  if (deep_out == SearchOutcome::kFound) {
    d.ub = std::min(d.ub, AssembledHeight());
    ++result_.deep_probe_plans;
  } else if (deep_out == SearchOutcome::kExhausted) {
    result_.deep_probe_proofs += deep_proven > lower_bound_;
    lower_bound_ = std::max(lower_bound_, deep_proven);
  }
}

// The fit question at the capacity and the descent take turns, the
// descent's fit_descent_nodes and fit_descent_share of the nodes: the fit
// question first (most fits with slack come within it), its searches kept
// at the capacity (Engine::kFit), so it goes on where it stopped and stays
// a complete search. A plan of the descent within the capacity is an
// answer; a bound the descent proves above the capacity is a proof. The
// relay probe runs once the solve has spent relay_after_nodes, as with the
// fit question alone.
SearchOutcome Solve::FitBesideDescent() {
  const std::uint64_t descent_turn = params_.tuning.fit_descent_nodes;
  // The fit question's turn, at least one node.
  const double ratio = (1 - params_.tuning.fit_descent_share) / params_.tuning.fit_descent_share;
  const double fit_nodes = std::ceil(static_cast<double>(descent_turn) * ratio);
  const std::uint64_t fit_turn =
      fit_nodes >= 1.8e19 ? UINT64_MAX : std::max<std::uint64_t>(static_cast<std::uint64_t>(fit_nodes), 1);
  const auto plan_fits = [&] {
    return OwnBest() <= *capacity_;
  };
  // Racing, another search's plan fits: this one goes on to minimise (the
  // caller), or stops with the race (kFit).
  while (!control_.stopped() && Frontier(UINT64_MAX) > *capacity_) {
    const std::uint64_t before = control_.nodes();
    const SearchOutcome out = TryTarget(*capacity_, fit_turn, nullptr, Engine::kFit);
    if (out != SearchOutcome::kLimit || control_.stopped()) return out;
    Descend(descent_turn);
    ++result_.fit_descent_turns;
    // The relay probe once the solve has spent relay_after_nodes, as the
    // fit question alone has it (the descent's stalls may come later).
    if (params_.tuning.relay_probe && control_.nodes() >= params_.tuning.relay_after_nodes && !control_.stopped())
      RelayProbe();
    Publish();
    if (plan_fits()) {
      ++result_.fit_descent_plans;
      return SearchOutcome::kFound;
    }
    if (lower_bound_ > *capacity_) return SearchOutcome::kExhausted;
    // Neither spent a node (every search stopped for memory): no change to come.
    if (control_.nodes() == before) break;
  }
  return plan_fits() ? SearchOutcome::kFound : SearchOutcome::kLimit;
}

// The windows of the restriction bound: around the highest load points
// (the load at each buffer's first task, gaps ignored: this only chooses the
// subsets), half-widths 1, 2, 4, ... points, lifetimes kept whole. A window
// holding every buffer is the problem itself and is skipped.
void Solve::PlanWindows() {
  std::vector<TaskIndex> pts;
  std::size_t nonzero = 0;
  for (const Buffer& b : problem_.buffers)
    if (b.size > 0) {
      pts.push_back(b.first_task);
      ++nonzero;
    }
  std::sort(pts.begin(), pts.end());
  pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
  if (pts.size() < 2 || params_.tuning.restriction_windows == 0) return;
  // Loads by a difference array over the points (wrapping sums only blur
  // the choice of windows, never a bound).
  std::vector<std::uint64_t> diff(pts.size() + 1, 0);
  for (const Buffer& b : problem_.buffers) {
    if (b.size == 0) continue;
    const std::size_t i = static_cast<std::size_t>(
        std::lower_bound(pts.begin(), pts.end(), b.first_task) - pts.begin());
    const std::size_t j = static_cast<std::size_t>(
        std::upper_bound(pts.begin(), pts.end(), b.last_task) - pts.begin());
    diff[i] += b.size;
    diff[j] -= b.size;
  }
  std::vector<std::uint64_t> load(pts.size());
  std::uint64_t run = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) load[i] = run += diff[i];
  std::vector<std::size_t> order(pts.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&load](std::size_t x, std::size_t y) { return load[x] > load[y]; });
  const std::size_t tops = std::min<std::size_t>(order.size(), 4);
  std::set<std::pair<std::size_t, std::size_t>> seen;
  for (std::size_t w = 1; w < pts.size() && windows_.size() < params_.tuning.restriction_windows; w *= 2) {
    bool any = false;
    for (std::size_t k = 0; k < tops && windows_.size() < params_.tuning.restriction_windows; ++k) {
      const std::size_t a = order[k] >= w ? order[k] - w : 0;
      const std::size_t b = std::min(order[k] + w, pts.size() - 1);
      std::size_t count = 0;
      for (const Buffer& buf : problem_.buffers)
        count += buf.size > 0 && buf.first_task <= pts[b] && buf.last_task >= pts[a];
      if (count >= nonzero || count > params_.tuning.restriction_max_buffers) continue;
      any = true;
      if (seen.insert({a, b}).second) windows_.push_back({pts[a], pts[b]});
    }
    if (!any) break;
  }
}

// One window: its buffers (whole lifetimes, fixed offsets kept) minimised by
// a nested solve under the remaining limits; its proven bound is one of the
// whole problem (every plan of the whole is one of the subset).
// A window runs only while the windows have spent no more nodes than the
// probes (both counted in nodes: deterministic), so they never take more
// than about half of the search.
void Solve::RestrictionStep() {
  if (next_window_ >= windows_.size() || control_.stopped()) return;
  if (restriction_nodes_ > control_.nodes() - restriction_nodes_) return;
  const TaskIndex first = windows_[next_window_].first;
  const TaskIndex last = windows_[next_window_].second;
  ++next_window_;
  Problem sub;
  for (const Buffer& b : problem_.buffers)
    if (b.size > 0 && b.first_task <= last && b.last_task >= first) sub.buffers.push_back(b);
  SolverParams sp;
  if (!NestedParams(params_.tuning.restriction_node_budget, 1.0, &sp)) return;
  sp.goal = SolveGoal::kMinimize;
  sp.capacity.reset();
  Result<SolveResult> r = SolveOffsets(sub, sp);
  if (!r.ok()) return;  // cannot happen for a subset of a valid problem
  control_.AddNodes(r->nodes);
  restriction_nodes_ += r->nodes;
  if (r->status != SolveStatus::kInfeasible) {
    restriction_bound_ = std::max(restriction_bound_, r->lower_bound);
    lower_bound_ = std::max(lower_bound_, r->lower_bound);
  }
  Publish();
}

void Solve::TakeGlobal(Part* part) {
  // The whole problem's plan restricted to the partition is a plan of it.
  const Instance& inst = *part->inst;
  std::uint64_t height = 0;
  for (const solver::Item& it : inst.items)
    height = std::max(height, global_->offsets[it.buffer] + it.height);
  if (part->has_plan && part->height <= height) return;
  part->offsets.resize(inst.items.size());
  for (std::size_t i = 0; i < inst.items.size(); ++i)
    part->offsets[i] = global_->offsets[inst.items[i].buffer];
  part->height = height;
  part->has_plan = true;
}

bool Solve::NestedParams(std::uint64_t node_budget, double share, SolverParams* sp) const {
  *sp = params_;
  sp->tuning.restriction_bound = false;
  sp->tuning.relay_probe = false;
  sp->compute_iis = false;
  sp->progress_to_stderr = false;
  sp->on_progress = nullptr;
  sp->initial_plan = nullptr;
  sp->threads = 1;  // nested in one search of a race, or in a solve of one
  // The relay probe's and samples' fit questions are short: the descent
  // beside them would halve what they get.
  sp->tuning.fit_descent = false;
  sp->node_limit = node_budget;
  if (params_.node_limit > 0) {
    const std::uint64_t left =
        control_.node_limit() - std::min(control_.node_limit(), control_.nodes());
    // share < 1: the product is below 2^64 (share = 1 would round up there).
    sp->node_limit = std::min<std::uint64_t>(
        node_budget,
        share >= 1 ? left : static_cast<std::uint64_t>(share * static_cast<double>(left)));
  }
  if (sp->node_limit == 0) return false;
  if (params_.time_limit_seconds < 1e9) {
    sp->time_limit_seconds = share * (params_.time_limit_seconds - control_.Seconds());
    if (!(sp->time_limit_seconds > 0)) return false;
  }
  return true;
}

void Solve::RelayProbe() {
  if (!relay_pending_) return;
  relay_pending_ = false;
  const std::uint64_t best = Frontier(OwnBest());
  if (best <= lower_bound_ || (capacity_ && params_.goal == SolveGoal::kFit && best <= *capacity_) ||
      problem_.buffers.size() > params_.tuning.relay_max_buffers)
    return;
  solver::RelayChains chains = solver::MergeRelays(problem_);
  if (chains.merged.buffers.size() == problem_.buffers.size()) return;
  SolverParams sp;
  if (!NestedParams(params_.tuning.relay_node_budget, params_.tuning.relay_share, &sp)) return;
  relay_chains_ = std::move(chains);
  result_.relay_buffers = relay_chains_->merged.buffers.size();
  sp.capacity = capacity_;
  const std::optional<SolveResult> r = SolveMerged(std::move(sp));
  if (!r || !r->has_plan || r->status == SolveStatus::kInfeasible) return;
  result_.relay_height = r->height;
  AdoptRelayPlan(r->plan, best);
}

std::optional<SolveResult> Solve::SolveMerged(SolverParams sp) {
  if (params_.progress_to_stderr || params_.on_progress)
    sp.on_progress = [this](const SolveProgress& p) { control_.ReportNested(p); };
  Result<SolveResult> r = SolveOffsets(relay_chains_->merged, sp);
  if (!r.ok()) return std::nullopt;  // cannot happen: the merged problem is valid when the problem is
  control_.AddNodes(r->nodes);
  relay_nodes_ += r->nodes;
  return std::move(*r);
}

bool Solve::AdoptRelayPlan(const OffsetsPlan& merged_plan, std::uint64_t best) {
  if (merged_plan.total >= best) return false;
  OffsetsPlan plan;
  plan.offsets = solver::SplitRelays(*relay_chains_, merged_plan.offsets);
  plan.total = TopOf(problem_, plan.offsets);
  plan.strategy = "relay";
  // Checked like every incumbent (a wrong split would be caught here, not
  // in the answer).
  if (!ValidateOffsetsPlan(problem_, plan, params_.alignment, false).ok()) return false;
  global_ = std::move(plan);
  for (Part& p : parts_)
    if (p.inst->base == 0) TakeGlobal(&p);
  Publish();
  return true;
}

// Fit questions on the merged problem find plans at heights the descent of
// the problem itself does not reach (on one MiniMalloc instance, at 2^19 nodes
// about half of the heights 1-3 % above the bound fit, docs/design/solver.md), but which
// heights is luck: the samples spread over the upper half of the gap below
// the best plan by a golden-ratio sequence, no height twice at one budget
// (when they are all asked, the budget doubles). The relay probe's and the
// samples' nodes stay within half of the solve's.
void Solve::RelaySample() {
  if (!params_.tuning.relay_samples || !relay_chains_ || control_.stopped()) return;
  if (relay_nodes_ > control_.nodes() - relay_nodes_) return;
  const std::uint64_t best = Frontier(OwnBest());
  if (best <= lower_bound_) return;
  // Heights of one granule are one question (a plan's height rounds up to
  // it); partitions of different granules: bytes.
  std::uint64_t granule = parts_.empty() ? 1 : parts_[0].inst->granule;
  for (const Part& p : parts_)
    if (p.inst->granule != granule) granule = 1;
  const std::uint64_t half = (best - lower_bound_) / 2;
  if (relay_sample_budget_ == 0) relay_sample_budget_ = params_.tuning.relay_sample_nodes;
  std::optional<std::uint64_t> target;
  for (int tries = 0; !target; ++tries) {
    if (tries == 16) {
      // Sixteen draws in a row were asked already at this budget (the
      // golden-ratio draws spread, so the upper half is about all asked):
      // ask again with twice the nodes.
      relay_asked_.clear();
      relay_sample_budget_ = internal::SaturatingMul(relay_sample_budget_, 2);
    }
    const double phase = std::fmod(static_cast<double>(++relay_draws_) * 0.6180339887498949, 1.0);
    const std::uint64_t down = static_cast<std::uint64_t>(phase * static_cast<double>(half)) + 1;
    std::uint64_t t = best - std::min(down, best - lower_bound_);
    t -= t % granule;
    t = std::max(t, lower_bound_);
    if (relay_asked_.insert(t).second) target = t;
  }
  SolverParams sp;
  if (!NestedParams(relay_sample_budget_, params_.tuning.relay_share, &sp)) return;
  sp.goal = SolveGoal::kFit;
  sp.capacity = *target;
  const std::optional<SolveResult> r = SolveMerged(std::move(sp));
  if (!r) return;
  ++result_.relay_samples;
  if (r->has_plan && r->status != SolveStatus::kInfeasible && AdoptRelayPlan(r->plan, best))
    ++result_.relay_sample_plans;
}

// The solve as a sequence of phases; ChoosePhases alone decides which of
// the searches run. A phase that answers (a proof, or the limit) ends it.
Result<SolveResult> Solve::Run() {
  if (Answer a = RunPresolve()) return std::move(*a);
  if (Answer a = QuickProofs()) return std::move(*a);
  if (Answer a = FindIncumbents()) return std::move(*a);
  const Phases phases = ChoosePhases();
  if (phases.fit)
    if (Answer a = FitWithinCapacity(phases)) return std::move(*a);
  if (phases.restriction_bound) PlanWindows();
  if (phases.minimize) Minimize();
  return Finish();
}

bool Solve::LimitSpent() const {
  const double limit = params_.time_limit_seconds;
  return limit > 0 && limit < 1e9 && control_.Seconds() >= limit;
}

Result<SolveResult> Solve::StoppedInPresolve() {
  std::ostringstream why;
  if (LimitSpent()) {
    why << "the time limit of " << shown_limit_ << " s was spent in the presolve of "
        << problem_.buffers.size() << " buffers";
  } else {
    why << "the stop request (SolverParams::should_stop) came during the presolve of "
        << problem_.buffers.size() << " buffers";
  }
  return OutOfTime(DeadlineExceeded(why.str()));
}

// Trivial placements, obstacles, independent time partitions. The presolve
// reads the limit in its loops and between its stages (on 10^6 buffers it
// takes seconds); a limit spent there is named as such.
Solve::Answer Solve::RunPresolve() {
  solver::PresolveOptions po;
  po.alignment = params_.alignment;
  po.decompose = params_.tuning.decompose;
  po.full_span_reduction = params_.tuning.full_span_reduction;
  po.caller_index = caller_index_;
  const HeuristicLimit left = Remaining();
  internal::Deadline deadline(left.seconds, left.should_stop);
  po.deadline = &deadline;
  Result<solver::Presolved> pre = solver::Presolve(problem_, po);
  if (!pre.ok() && pre.status().code() == StatusCode::kDeadlineExceeded) return StoppedInPresolve();
  if (!pre.ok()) return pre.status();
  presolved_ = std::move(*pre);
  result_.partitions = presolved_.instances.size();
  return std::nullopt;
}

// The presolve's bound, and the proofs that need no search: overlapping
// fixed buffers, a buffer or the peak above the capacity.
Solve::Answer Solve::QuickProofs() {
  if (!presolved_.conflict.empty()) {
    Infeasible(presolved_.conflict, presolved_.conflict_buffers);
    return Finish();
  }
  lower_bound_ = std::max(presolved_.peak, presolved_.placed_height);
  for (const Instance& inst : presolved_.instances) lower_bound_ = std::max(lower_bound_, inst.lower_bound);
  if (!capacity_) return std::nullopt;
  for (std::size_t i = 0; i < problem_.buffers.size(); ++i) {
    const Buffer& b = problem_.buffers[i];
    const std::uint64_t top = b.fixed_offset ? *b.fixed_offset + b.size : b.size;
    if (b.size > 0 && top > *capacity_) {
      Infeasible(solver::BufferName(problem_, i, caller_index_) + " " +
                     (b.fixed_offset ? "ends at its fixed offset + size " + std::to_string(top)
                                     : "alone needs " + std::to_string(b.size) + " bytes") +
                     ", more than the capacity of " + std::to_string(*capacity_),
                 {i});
      return Finish();
    }
  }
  if (lower_bound_ > *capacity_) {
    Infeasible("the buffers need at least " + std::to_string(lower_bound_) +
                   " bytes (peak live bytes or a partition's bound), more than the capacity of " +
                   std::to_string(*capacity_),
               {});
    return Finish();
  }
  return std::nullopt;
}

// The best heuristic plan of the whole problem (or the start plan when
// lower), and of each partition with a base.
Solve::Answer Solve::FindIncumbents() {
  // The presolve alone spent the limit: said so (the heuristics would only
  // report the 1e-9 s left to them).
  if (LimitSpent()) return StoppedInPresolve();
  if (params_.tuning.heuristic_incumbent) {
    Result<OffsetsPlan> h = BestHeuristic(problem_, params_.alignment, Remaining());
    if (!h.ok() && h.status().code() == StatusCode::kDeadlineExceeded) return OutOfTime(h.status());
    if (!h.ok()) return h.status();
    global_ = std::move(*h);
  }
  // The heuristics' own height is reported even when a lower initial plan
  // takes over (it says what the start saved).
  const std::optional<std::uint64_t> heuristic_total =
      global_ ? std::optional<std::uint64_t>(global_->total) : std::nullopt;
  bool initial_taken = false;
  if (params_.initial_plan &&
      ValidateOffsetsPlan(problem_, *params_.initial_plan, params_.alignment, false).ok() &&
      (!global_ || params_.initial_plan->total < global_->total)) {
    global_ = *params_.initial_plan;
    global_->strategy = "initial";
    initial_taken = true;
  }
  parts_.resize(presolved_.instances.size());
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    parts_[k].inst = &presolved_.instances[k];
    parts_[k].solver = std::make_unique<PartitionSolver>(presolved_.instances[k], params_);
    if (presolved_.instances[k].base == 0 && global_) {
      TakeGlobal(&parts_[k]);
    } else {
      const Status st = PartHeuristic(problem_, params_.alignment, Remaining(), &parts_[k]);
      if (st.code() == StatusCode::kDeadlineExceeded) return OutOfTime(st);
      if (!st.ok()) return st;
    }
  }
  result_.heuristic_height = initial_taken ? heuristic_total : std::optional<std::uint64_t>(OwnBest());
  Publish();
  return std::nullopt;
}

Solve::Phases Solve::ChoosePhases() const {
  Phases ph;
  if (params_.time_limit_seconds <= 0) return ph;  // the heuristics alone
  const SolverTuning& t = params_.tuning;
  // The general engine starts over at every probe: no turns, no slices.
  bool skyline = true;
  for (const Part& p : parts_) skyline = skyline && !p.inst->needs_general;
  // Both goals need a plan within the capacity first.
  ph.fit = capacity_ && Frontier(OwnBest()) > *capacity_;
  ph.fit_beside_descent = ph.fit && t.fit_descent && *capacity_ > lower_bound_ &&
                          t.minimize_search == MinimizeSearch::kDescent && skyline;
  ph.relay_in_fit = ph.fit && !ph.fit_beside_descent && t.relay_probe;
  // Racing to minimise, a search stops fitting once another has fitted.
  ph.sliced_fit = follow_frontier_ && params_.goal == SolveGoal::kMinimize && skyline;
  ph.minimize = params_.goal == SolveGoal::kMinimize;
  ph.restriction_bound = ph.minimize && t.restriction_bound;
  return ph;
}

// A plan within the capacity, or a proof that none fits; the limit without
// either ends the solve.
Solve::Answer Solve::FitWithinCapacity(const Phases& phases) {
  const std::uint64_t best = OwnBest();
  const SearchOutcome out = phases.fit_beside_descent ? FitBesideDescent() : FitAlone(phases, best);
  if (out == SearchOutcome::kExhausted) {
    Infeasible("the search proved that no placement fits in " + std::to_string(*capacity_) + " bytes", {});
    return Finish();
  }
  Publish();
  if (out == SearchOutcome::kLimit && Frontier(best) > *capacity_) return Finish();
  return std::nullopt;
}

// The fit question at the capacity alone. With the relay probe, the search
// gets relay_after_nodes first, then the merged problem its turn, then the
// search goes on where it stopped. Sliced (racing to minimise), it probes
// 2^16 nodes at a time and stops once another search's plan fits.
SearchOutcome Solve::FitAlone(const Phases& phases, std::uint64_t best) {
  SearchOutcome out = SearchOutcome::kLimit;
  if (phases.relay_in_fit) {
    out = TryTarget(*capacity_, std::max<std::uint64_t>(params_.tuning.relay_after_nodes, 1), nullptr);
    if (out == SearchOutcome::kLimit && !control_.stopped()) {
      RelayProbe();
      if (OwnBest() <= *capacity_) out = SearchOutcome::kFound;
    }
  }
  const std::uint64_t slice = phases.sliced_fit ? std::uint64_t{1} << 16 : UINT64_MAX;
  while (out == SearchOutcome::kLimit && !control_.stopped() && Frontier(best) > *capacity_) {
    const std::uint64_t before = control_.nodes();
    out = TryTarget(*capacity_, slice, nullptr);
    // One probe unless sliced; a probe that spent no node (a search that
    // cannot go on, e.g. the general engine's dead end) will not change.
    if (!phases.sliced_fit || control_.nodes() == before) break;
  }
  return out;
}

Result<SolveResult> Solve::Finish() {
  SolveResult& r = result_;
  r.lower_bound = lower_bound_;
  r.restriction_bound = restriction_bound_;
  if (infeasible_) {
    r.status = SolveStatus::kInfeasible;
    r.lower_bound = std::max(lower_bound_, capacity_ ? *capacity_ + 1 : 0);
    if (params_.compute_iis && !(race_ && race_->iis_claimed.exchange(true))) {
      TM_ASSIGN_OR_RETURN(solver::IisResult iis,
                          solver::IrreducibleInfeasibleSubset(problem_, *capacity_, params_,
                                                              culprits_));
      r.infeasible_subset = std::move(iis.buffers);
      r.subset_irreducible = iis.irreducible;
    }
  } else if (out_of_time_ && !global_) {
    r.status = SolveStatus::kUnknown;  // reason set by OutOfTime
  } else if (!parts_.empty() || presolved_.instances.empty() || out_of_time_) {
    OffsetsPlan plan;
    // Out of time, some partition has no plan: only the global one is whole.
    if (!out_of_time_) plan.offsets = AssembledOffsets();
    plan.total = out_of_time_ ? UINT64_MAX : TopOf(problem_, plan.offsets);
    plan.strategy = "exact";
    if (global_ && global_->total < plan.total) {
      plan.offsets = global_->offsets;
      plan.total = global_->total;
      plan.strategy = "exact(" + global_->strategy + ")";
    }
    plan.lower_bound = std::min(lower_bound_, plan.total);
    TM_RETURN_IF_ERROR(ValidateOffsetsPlan(problem_, plan, params_.alignment, false)
                           .WithContext("internal error: the solver produced an invalid plan"));
    r.has_plan = true;
    r.height = plan.total;
    r.lower_bound = std::min(lower_bound_, plan.total);
    const bool fits = !capacity_ || plan.total <= *capacity_;
    if (!fits) {
      r.status = SolveStatus::kUnknown;
      r.reason = "limit reached: no plan within the capacity found, none proven impossible";
      if (!general_note_.empty()) r.reason += "; " + general_note_;
    } else if (plan.total == r.lower_bound) {
      r.status = SolveStatus::kOptimal;
    } else {
      r.status = SolveStatus::kFeasible;
      if (r.reason.empty()) r.reason = !memory_note_.empty() ? memory_note_ : general_note_;
    }
    r.gap = plan.total == 0 ? 0.0
                            : static_cast<double>(plan.total - r.lower_bound) /
                                  static_cast<double>(plan.total);
    plan.seconds = control_.Seconds();
    r.plan = std::move(plan);
  }
  r.nodes = control_.nodes();
  r.seconds = control_.Seconds();
  // One last report, so a caller always sees the final state.
  if (params_.progress_to_stderr || params_.on_progress) control_.Report(r.seconds);
  return std::move(r);
}

// One Solve of the problem, shown against the caller's whole limit.
Result<SolveResult> RunSolve(const Problem& problem, const SolverParams& params, double shown_limit,
                             std::optional<std::uint64_t> capacity, std::span<const std::size_t> caller_index) {
  auto solve = std::make_unique<Solve>(problem, params, capacity);  // large: on the heap
  solve->ShowLimit(shown_limit);
  solve->SetCallerIndex(caller_index);
  return solve->Run();
}

// The answer of the two turns: the lower plan (the second's on a tie), the
// higher bound, the counts of both.
SolveResult CombineTurns(const SolveResult& a, const SolveResult& b) {
  SolveResult out = b.has_plan && (!a.has_plan || b.height <= a.height) ? b : a;
  out.lower_bound = std::max(a.lower_bound, b.lower_bound);
  out.restriction_bound = std::max(a.restriction_bound, b.restriction_bound);
  if (out.has_plan) {
    out.status = out.height == out.lower_bound ? SolveStatus::kOptimal : SolveStatus::kFeasible;
    out.gap = out.height == 0 ? 0.0
                              : static_cast<double>(out.height - out.lower_bound) / static_cast<double>(out.height);
    if (out.status == SolveStatus::kOptimal) out.reason.clear();
  }
  out.deep_probes = a.deep_probes + b.deep_probes;
  out.deep_probe_plans = a.deep_probe_plans + b.deep_probe_plans;
  out.deep_probe_proofs = a.deep_probe_proofs + b.deep_probe_proofs;
  out.relay_samples = a.relay_samples + b.relay_samples;
  out.relay_sample_plans = a.relay_sample_plans + b.relay_sample_plans;
  out.fit_descent_turns = a.fit_descent_turns + b.fit_descent_turns;
  out.fit_descent_plans = a.fit_descent_plans + b.fit_descent_plans;
  out.nodes = a.nodes + b.nodes;
  out.heuristic_height = a.heuristic_height;
  out.weighted_turn = true;
  return out;
}

// The default portfolio for (1 - SolverParams::weighted_share) of the
// limit, then, when it ends with a plan above the bound and limits left,
// weighted restarts from its best plan for the rest.
Result<SolveResult> SolveInTurn(const Problem& problem, const SolverParams& params,
                                std::optional<std::uint64_t> capacity,
                                std::span<const std::size_t> caller_index) {
  const auto start = std::chrono::steady_clock::now();
  SolverParams first = params;
  first.time_limit_seconds = params.time_limit_seconds * (1 - params.tuning.weighted_share);
  // Whether the caller's hook stopped the first search (asked no more often
  // than without the turn).
  bool stopped = false;
  if (params.should_stop)
    first.should_stop = [&] {
      stopped = stopped || params.should_stop();
      return stopped;
    };
  Result<SolveResult> r = RunSolve(problem, first, params.time_limit_seconds, capacity, caller_index);
  if (!r.ok()) return r;
  const SolveResult& a = *r;
  const bool out_of_nodes = params.node_limit != 0 && a.nodes >= params.node_limit;
  if (a.status != SolveStatus::kFeasible || stopped || out_of_nodes) return r;
  SolverParams second = params;
  second.tuning.portfolio = WeightedRestartsPortfolio();
  const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  second.time_limit_seconds = std::max(params.time_limit_seconds - spent, 0.0);
  if (params.node_limit != 0) second.node_limit = params.node_limit - a.nodes;
  // From the best plan: the heuristics ran already.
  if (a.has_plan) second.initial_plan = &a.plan;
  if (second.time_limit_seconds <= 0) return r;
  Result<SolveResult> r2 = RunSolve(problem, second, params.time_limit_seconds, capacity, caller_index);
  if (!r2.ok()) return r2;
  SolveResult out = CombineTurns(a, *r2);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

// The problem in the canonical order: one search, a race, or the
// portfolio and weighted restarts in turn.
Result<SolveResult> SolveCanonical(const Problem& problem, const SolverParams& params,
                                   std::optional<std::uint64_t> capacity,
                                   std::span<const std::size_t> caller_index) {
  const unsigned threads =
      params.threads == 0 ? std::clamp(std::thread::hardware_concurrency(), 1u, kMaxSolverThreads)
                          : params.threads;
  // A race needs a search: time_limit 0 runs the heuristics alone.
  if (threads > 1 && params.time_limit_seconds > 0)
    return solver::SolveRace(problem, params, threads, caller_index);
  const bool in_turn = params.goal == SolveGoal::kMinimize && params.tuning.weighted_share > 0 &&
                       std::isfinite(params.time_limit_seconds) && params.time_limit_seconds > 0 &&
                       params.tuning.portfolio == DefaultPortfolio();
  if (in_turn) return SolveInTurn(problem, params, capacity, caller_index);
  // On the heap: the state is large, and SolveOffsets nests (IIS tests).
  auto solve = std::make_unique<Solve>(problem, params, capacity);
  solve->SetCallerIndex(caller_index);
  return solve->Run();
}

Status CheckParams(const SolverParams& params) {
  TM_RETURN_IF_ERROR(ValidateAlignment(params.alignment, "SolverParams::alignment"));
  if (std::isnan(params.time_limit_seconds) || params.time_limit_seconds < 0)
    return InvalidArgument("time limit must be >= 0 seconds (+infinity for none)");
  if (std::isnan(params.iis_time_limit_seconds) || params.iis_time_limit_seconds < 0)
    return InvalidArgument("IIS time limit must be >= 0 seconds");
  if (params.threads > kMaxSolverThreads)
    return InvalidArgument("threads must be at most " + std::to_string(kMaxSolverThreads) +
                           " (SolverParams::threads; 0: one per hardware thread), got " +
                           std::to_string(params.threads));
  return CheckTuning(params.tuning);
}

}  // namespace

// The search runs on the buffers in the canonical order (canonical_order.h),
// so that neither the rows' order nor the ids change the answer; the start
// plan goes in, and the plan and the infeasible subset come out, mapped.
Result<SolveResult> SolveOffsets(const Problem& problem, const SolverParams& params) {
  TM_RETURN_IF_ERROR(CheckParams(params));
  TM_RETURN_IF_ERROR(CheckProblem(problem));
  const std::optional<std::uint64_t> capacity = params.capacity ? params.capacity : problem.capacity;
  if (params.goal == SolveGoal::kFit && !capacity)
    return InvalidArgument("the fit goal needs a capacity (SolverParams::capacity or Problem::capacity)");
  const std::vector<std::size_t> order = solver::CanonicalBufferOrder(problem);
  bool identity = true;
  for (std::size_t i = 0; i < order.size() && identity; ++i) identity = order[i] == i;
  if (identity) return SolveCanonical(problem, params, capacity, {});
  const Problem canonical = solver::Reordered(problem, order);
  SolverParams p = params;
  OffsetsPlan start;
  if (params.initial_plan && params.initial_plan->offsets.size() == order.size()) {
    start = *params.initial_plan;
    for (std::size_t i = 0; i < order.size(); ++i) start.offsets[i] = params.initial_plan->offsets[order[i]];
    p.initial_plan = &start;
  }
  TM_ASSIGN_OR_RETURN(SolveResult r, SolveCanonical(canonical, p, capacity, order));
  if (r.has_plan) r.plan.offsets = solver::OffsetsInProblemOrder(order, r.plan.offsets);
  for (std::size_t& i : r.infeasible_subset) i = order[i];
  std::sort(r.infeasible_subset.begin(), r.infeasible_subset.end());
  return r;
}

Result<SolveResult> solver::SolveRaceMember(const Problem& problem, const SolverParams& params,
                                            RaceShared* race, bool follow_frontier,
                                            std::span<const std::size_t> caller_index) {
  const std::optional<std::uint64_t> capacity = params.capacity ? params.capacity : problem.capacity;
  auto solve = std::make_unique<Solve>(problem, params, capacity, race, follow_frontier);
  solve->SetCallerIndex(caller_index);
  return solve->Run();
}

}  // namespace tensormem
