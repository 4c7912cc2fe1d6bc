// SPDX-License-Identifier: Apache-2.0
// SolveRace (race.h): searches on threads, each on its own copy of the
// problem in its own buffer order, sharing the lowest plan height and the
// highest bound; the answer is the lowest plan, mapped back and validated.
#include "solver/race.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <new>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "solver/search_control.h"
#include "solver/shuffle.h"
#include "tensormem/validator.h"

namespace tensormem::solver {
namespace {

struct Member {
  std::vector<std::size_t> order;  // position i holds the problem's buffer order[i]
  Problem problem;                 // the problem in that order (member 0: unused)
  OffsetsPlan initial;             // SolverParams::initial_plan in that order
  std::vector<std::size_t> caller;  // the caller's index of each buffer in that order
  SolverParams params;
  std::optional<Result<SolveResult>> result;
};

// A result that ends the race for everyone: the optimum proven, nothing
// fits, or a plan for the fit question.
bool Decisive(const Result<SolveResult>& r, const SolverParams& params) {
  if (!r.ok()) return true;
  if (r->status == SolveStatus::kOptimal || r->status == SolveStatus::kInfeasible) return true;
  return params.goal == SolveGoal::kFit && r->status == SolveStatus::kFeasible;
}

// Which of two answers with plans is better: within the capacity first,
// then lower.
bool Better(const SolveResult& a, const SolveResult& b, std::optional<std::uint64_t> capacity) {
  const bool fits_a = !capacity || a.height <= *capacity;
  const bool fits_b = !capacity || b.height <= *capacity;
  if (fits_a != fits_b) return fits_a;
  return a.height < b.height;
}

// The progress of every member, merged: the lowest plan, the highest bound,
// the nodes of all.
class Progress {
 public:
  explicit Progress(std::size_t members) : latest_(members) {}
  void Set(std::size_t member, const SolveProgress& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    latest_[member] = p;
  }
  SolveProgress Merged(double seconds) const {
    std::lock_guard<std::mutex> lock(mutex_);
    SolveProgress out;
    for (const SolveProgress& p : latest_) {
      if (p.has_plan && (!out.has_plan || p.best_height < out.best_height)) out.best_height = p.best_height;
      out.has_plan = out.has_plan || p.has_plan;
      out.lower_bound = std::max(out.lower_bound, p.lower_bound);
      out.nodes = internal::SaturatingAdd(out.nodes, p.nodes);
    }
    out.seconds = seconds;
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<SolveProgress> latest_;
};

void Emit(const SolverParams& params, const SolveProgress& p) {
  if (params.progress_to_stderr) SearchControl::PrintProgress(p);
  if (params.on_progress) params.on_progress(p);
}

// One race: its members set up, run on threads, and their answers merged.
class Race {
 public:
  Race(const Problem& problem, const SolverParams& params, unsigned threads,
       std::span<const std::size_t> caller_index)
      : problem_(problem),
        params_(params),
        threads_(threads),
        caller_index_(caller_index),
        capacity_(params.capacity ? params.capacity : problem.capacity),
        report_(params.progress_to_stderr || static_cast<bool>(params.on_progress)),
        progress_(threads),
        interval_(params.progress_interval_seconds > 0 ? params.progress_interval_seconds : 1.0),
        due_(interval_),
        members_(threads),
        // Minimising with the default portfolio, the odd searches run
        // WeightedRestartsPortfolio(): each of the two proves problems the
        // other does not, so a race holds both.
        weighted_odd_(params.goal == SolveGoal::kMinimize && params.tuning.portfolio == DefaultPortfolio()) {}

  Result<SolveResult> Run() {
    SetUpMembers();
    TM_RETURN_IF_ERROR(RunMembers());
    // Errors first (bad input is refused before the race: these are internal).
    for (Member& m : members_)
      if (!m.result->ok()) return m.result->status();
    if (const std::optional<unsigned> k = InfeasibleMember()) return InfeasibleAnswer(*k);
    return LowestPlanAnswer();
  }

 private:
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  // The first search of each portfolio searches the problem's (canonical)
  // order, as one thread would run them in turn; the others an order
  // shuffled from their number.
  bool Shuffled(unsigned k) const { return k > 1 || (k == 1 && !weighted_odd_); }
  // The position of a member's buffer i in the problem.
  std::size_t ToProblem(unsigned k, std::size_t i) const { return members_[k].order[i]; }

  // The merged report, unless it is the same state again (the final report
  // right after a due one).
  void EmitMerged(double now) {
    const SolveProgress p = progress_.Merged(now);
    if (last_ && last_->nodes == p.nodes && last_->has_plan == p.has_plan &&
        last_->best_height == p.best_height && last_->lower_bound == p.lower_bound)
      return;
    Emit(params_, p);
    last_ = p;
  }
  // The merged report is due every interval (member 0's callback and the
  // wait for the members, both on the calling thread).
  void EmitIfDue() {
    const double now = Seconds();
    if (now < due_) return;
    EmitMerged(now);
    while (due_ <= now) due_ += interval_;
  }

  void SetUpMembers();
  void Prepare(unsigned k);
  void RunMember(unsigned k);
  Status RunMembers();
  std::optional<unsigned> InfeasibleMember() const;
  SolveResult InfeasibleAnswer(unsigned k);
  Result<SolveResult> LowestPlanAnswer();

  const Problem& problem_;
  const SolverParams& params_;
  const unsigned threads_;
  const std::span<const std::size_t> caller_index_;
  const std::optional<std::uint64_t> capacity_;
  const bool report_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  RaceShared race_;
  Progress progress_;
  const double interval_;
  double due_;
  std::optional<SolveProgress> last_;  // the last report emitted
  std::vector<Member> members_;
  const bool weighted_odd_;
  std::mutex mutex_;
  std::condition_variable finished_cv_;
  unsigned finished_ = 0;
};

// Each member's parameters: one thread, its share of the node limit, its
// portfolio; only member 0 asks the caller's stop hook and reports.
void Race::SetUpMembers() {
  for (unsigned k = 0; k < threads_; ++k) {
    SolverParams& p = members_[k].params;
    p = params_;
    p.threads = 1;
    if (weighted_odd_ && k % 2 == 1) p.tuning.portfolio = WeightedRestartsPortfolio();
    // node_limit split evenly (each member gets at least one node).
    if (params_.node_limit > 0)
      p.node_limit = std::max<std::uint64_t>(params_.node_limit / threads_ + (k < params_.node_limit % threads_), 1);
    // Only the calling thread asks the caller (a binding's Ctrl-C check must
    // run on it); the others stop by the race's flag.
    if (k > 0) p.should_stop = nullptr;
    p.progress_to_stderr = false;
    p.on_progress = nullptr;
    if (report_) {
      // Member 0 reports for all, on the calling thread.
      p.on_progress = [this, k](const SolveProgress& sp) {
        progress_.Set(k, sp);
        if (k == 0) EmitIfDue();
      };
    }
  }
}

// Search k's order, problem and start plan, made on its own thread (on
// 10^6 buffers a copy takes a while); its time limit is what is left.
void Race::Prepare(unsigned k) {
  Member& m = members_[k];
  const std::size_t n = problem_.buffers.size();
  m.order.resize(n);
  std::iota(m.order.begin(), m.order.end(), std::size_t{0});
  if (Shuffled(k)) {
    ShuffleFromSeed(std::span<std::size_t>(m.order), k);
    m.problem.capacity = problem_.capacity;
    m.problem.buffers.reserve(n);
    for (std::size_t i : m.order) m.problem.buffers.push_back(problem_.buffers[i]);
    m.caller.resize(n);
    for (std::size_t i = 0; i < n; ++i) m.caller[i] = caller_index_.empty() ? m.order[i] : caller_index_[m.order[i]];
    if (params_.initial_plan) {
      m.initial = *params_.initial_plan;
      if (m.initial.offsets.size() == n)
        for (std::size_t i = 0; i < n; ++i) m.initial.offsets[i] = params_.initial_plan->offsets[m.order[i]];
      m.params.initial_plan = &m.initial;
    }
  }
  if (const double limit = params_.time_limit_seconds; limit < 1e9)
    m.params.time_limit_seconds = std::max(limit - Seconds(), 1e-9);
}

// One member's search, on its thread. An exception must not leave a thread
// (it would end the process); one search's is the answer's.
void Race::RunMember(unsigned k) {
  Member& m = members_[k];
  Result<SolveResult> r = Internal("search " + std::to_string(k) + " did not run");
  try {
    Prepare(k);
    r = Shuffled(k) ? SolveRaceMember(m.problem, m.params, &race_, /*follow_frontier=*/k > 0, m.caller)
                    : SolveRaceMember(problem_, m.params, &race_, /*follow_frontier=*/k > 0, caller_index_);
  } catch (const std::bad_alloc&) {
    r = ResourceExhausted("out of memory in search " + std::to_string(k) + " of " + std::to_string(threads_) +
                          " (SolverParams::threads: each search holds its own copy of the problem)");
  } catch (const std::exception& e) {
    r = Internal("search " + std::to_string(k) + " of " + std::to_string(threads_) + ": " + e.what());
  }
  if (Decisive(r, params_)) race_.done.store(true);
  std::lock_guard<std::mutex> lock(mutex_);
  m.result.emplace(std::move(r));
  ++finished_;
  finished_cv_.notify_all();
}

// Members 1.. on threads, member 0 on this one; then this thread waits for
// the others, keeping the caller's stop request and the progress report.
Status Race::RunMembers() {
  std::vector<std::thread> workers;
  std::optional<Status> start_error;
  for (unsigned k = 1; k < threads_; ++k) {
    try {
      workers.emplace_back([this, k] { RunMember(k); });
    } catch (const std::system_error& e) {
      start_error = ResourceExhausted("cannot start search thread " + std::to_string(k) + " of " +
                                      std::to_string(threads_) + " (SolverParams::threads): " + e.what());
      race_.done.store(true);
      break;
    }
  }
  if (!start_error) RunMember(0);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    while (finished_ < workers.size() + (start_error ? 0 : 1)) {
      finished_cv_.wait_for(lock, std::chrono::milliseconds(20));
      if (params_.should_stop) {
        lock.unlock();
        if (params_.should_stop()) race_.done.store(true);
        lock.lock();
      }
      if (report_) {
        lock.unlock();
        EmitIfDue();
        lock.lock();
      }
    }
  }
  for (std::thread& t : workers) t.join();
  return start_error ? *start_error : Status::Ok();
}

// The member whose answer is a proof that nothing fits (one with an
// infeasible subset, when one computed it).
std::optional<unsigned> Race::InfeasibleMember() const {
  std::optional<unsigned> infeasible;
  for (unsigned k = 0; k < threads_; ++k) {
    const SolveResult& r = **members_[k].result;
    if (r.status == SolveStatus::kInfeasible &&
        (!infeasible || ((*members_[*infeasible].result)->infeasible_subset.empty() && !r.infeasible_subset.empty())))
      infeasible = k;
  }
  return infeasible;
}

// Nothing fits: member k's answer, its subset in the problem's indices.
SolveResult Race::InfeasibleAnswer(unsigned k) {
  SolveResult out = std::move(**members_[k].result);
  for (std::size_t& i : out.infeasible_subset) i = ToProblem(k, i);
  std::sort(out.infeasible_subset.begin(), out.infeasible_subset.end());
  for (unsigned other = 0; other < threads_; ++other)
    if (other != k) out.nodes = internal::SaturatingAdd(out.nodes, (*members_[other].result)->nodes);
  out.seconds = Seconds();
  out.threads = threads_;
  if (report_) EmitMerged(out.seconds);
  return out;
}

// The lowest plan (ties: the lower member), the highest bound of all, the
// counts summed; the plan mapped back and validated.
Result<SolveResult> Race::LowestPlanAnswer() {
  unsigned best = 0;
  for (unsigned k = 1; k < threads_; ++k) {
    const SolveResult& r = **members_[k].result;
    const SolveResult& b = **members_[best].result;
    if (r.has_plan && (!b.has_plan || Better(r, b, capacity_))) best = k;
  }
  SolveResult out = std::move(**members_[best].result);
  std::uint64_t bound = out.lower_bound;
  for (unsigned k = 0; k < threads_; ++k) {
    if (k == best) continue;
    const SolveResult& r = **members_[k].result;
    bound = std::max(bound, r.lower_bound);
    out.restriction_bound = std::max(out.restriction_bound, r.restriction_bound);
    out.nodes = internal::SaturatingAdd(out.nodes, r.nodes);
    out.deep_probes += r.deep_probes;
    out.deep_probe_plans += r.deep_probe_plans;
    out.deep_probe_proofs += r.deep_probe_proofs;
    out.fit_descent_turns += r.fit_descent_turns;
    out.fit_descent_plans += r.fit_descent_plans;
    out.relay_samples += r.relay_samples;
    out.relay_sample_plans += r.relay_sample_plans;
    if (r.heuristic_height && (!out.heuristic_height || *r.heuristic_height < *out.heuristic_height))
      out.heuristic_height = r.heuristic_height;
  }
  out.seconds = Seconds();
  out.threads = threads_;
  if (out.has_plan) {
    const std::size_t n = problem_.buffers.size();
    std::vector<std::uint64_t> offsets(n, 0);
    for (std::size_t i = 0; i < n; ++i) offsets[ToProblem(best, i)] = out.plan.offsets[i];
    out.plan.offsets = std::move(offsets);
    out.lower_bound = std::min(bound, out.height);
    out.plan.lower_bound = out.lower_bound;
    out.plan.seconds = out.seconds;
    TM_RETURN_IF_ERROR(ValidateOffsetsPlan(problem_, out.plan, params_.alignment, false)
                           .WithContext("internal error: the solver's race produced an invalid plan"));
    const bool fits = !capacity_ || out.height <= *capacity_;
    if (fits && out.height == out.lower_bound) {
      out.status = SolveStatus::kOptimal;
      out.reason.clear();
    } else if (fits) {
      out.status = SolveStatus::kFeasible;
    }
    out.gap = out.height == 0 ? 0.0
                              : static_cast<double>(out.height - out.lower_bound) /
                                    static_cast<double>(out.height);
  } else {
    out.lower_bound = bound;
  }
  if (report_) EmitMerged(out.seconds);
  return out;
}

}  // namespace

Result<SolveResult> SolveRace(const Problem& problem, const SolverParams& params, unsigned threads,
                              std::span<const std::size_t> caller_index) {
  // On the heap: its members hold copies of the problem and their results.
  auto race = std::make_unique<Race>(problem, params, threads, caller_index);
  return race->Run();
}

}  // namespace tensormem::solver
