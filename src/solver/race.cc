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

}  // namespace

Result<SolveResult> SolveRace(const Problem& problem, const SolverParams& params, unsigned threads,
                              std::span<const std::size_t> caller_index) {
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const std::optional<std::uint64_t> capacity = params.capacity ? params.capacity : problem.capacity;
  const std::size_t n = problem.buffers.size();
  const bool report = params.progress_to_stderr || static_cast<bool>(params.on_progress);
  RaceShared race;
  Progress progress(threads);

  // The merged report is due every interval (member 0's callback and the
  // wait below, both on the calling thread); the last one is the answer's.
  const double interval = params.progress_interval_seconds > 0 ? params.progress_interval_seconds : 1.0;
  double due = interval;
  std::optional<SolveProgress> last;  // the last report emitted
  const auto emit = [&](double now) {
    const SolveProgress p = progress.Merged(now);
    if (last && last->nodes == p.nodes && last->has_plan == p.has_plan && last->best_height == p.best_height &&
        last->lower_bound == p.lower_bound)
      return;  // the same state again (the final report right after a due one)
    Emit(params, p);
    last = p;
  };
  const auto emit_if_due = [&] {
    const double now = seconds();
    if (now < due) return;
    emit(now);
    while (due <= now) due += interval;
  };

  std::vector<Member> members(threads);
  // Minimising with the default portfolio, the odd searches run
  // WeightedRestartsPortfolio(): each of the two proves problems the other
  // does not, so a race holds both. The first search of each portfolio
  // searches the problem's (canonical) order, as one thread would run them
  // in turn; the others an order shuffled from their number.
  const bool weighted_odd = params.goal == SolveGoal::kMinimize && params.tuning.portfolio == DefaultPortfolio();
  const auto shuffled = [weighted_odd](unsigned k) { return k > 1 || (k == 1 && !weighted_odd); };
  // Search k's order, problem and start plan, made on its own thread (on
  // 10^6 buffers a copy takes a while); its time limit is what is left.
  const auto prepare = [&](unsigned k) {
    Member& m = members[k];
    m.order.resize(n);
    std::iota(m.order.begin(), m.order.end(), std::size_t{0});
    if (shuffled(k)) {
      ShuffleFromSeed(std::span<std::size_t>(m.order), k);
      m.problem.capacity = problem.capacity;
      m.problem.buffers.reserve(n);
      for (std::size_t i : m.order) m.problem.buffers.push_back(problem.buffers[i]);
      m.caller.resize(n);
      for (std::size_t i = 0; i < n; ++i) m.caller[i] = caller_index.empty() ? m.order[i] : caller_index[m.order[i]];
      if (params.initial_plan) {
        m.initial = *params.initial_plan;
        if (m.initial.offsets.size() == n)
          for (std::size_t i = 0; i < n; ++i) m.initial.offsets[i] = params.initial_plan->offsets[m.order[i]];
        m.params.initial_plan = &m.initial;
      }
    }
    if (const double limit = params.time_limit_seconds; limit < 1e9)
      m.params.time_limit_seconds = std::max(limit - seconds(), 1e-9);
  };
  for (unsigned k = 0; k < threads; ++k) {
    Member& m = members[k];
    SolverParams& p = m.params;
    p = params;
    p.threads = 1;
    if (weighted_odd && k % 2 == 1) p.tuning.portfolio = WeightedRestartsPortfolio();
    // node_limit split evenly (each member gets at least one node).
    if (params.node_limit > 0)
      p.node_limit = std::max<std::uint64_t>(params.node_limit / threads + (k < params.node_limit % threads), 1);
    // Only the calling thread asks the caller (a binding's Ctrl-C check must
    // run on it); the others stop by the race's flag.
    if (k > 0) p.should_stop = nullptr;
    p.progress_to_stderr = false;
    p.on_progress = nullptr;
    if (report) {
      // Member 0 reports for all, on the calling thread.
      p.on_progress = [&progress, &emit_if_due, k](const SolveProgress& sp) {
        progress.Set(k, sp);
        if (k == 0) emit_if_due();
      };
    }
  }

  std::mutex mutex;
  std::condition_variable finished_cv;
  unsigned finished = 0;
  const auto run = [&](unsigned k) {
    Member& m = members[k];
    // An exception must not leave a thread (it would end the process); one
    // search's is the answer's.
    Result<SolveResult> r = Internal("search " + std::to_string(k) + " did not run");
    try {
      prepare(k);
      r = shuffled(k) ? SolveRaceMember(m.problem, m.params, &race, /*follow_frontier=*/k > 0, m.caller)
                      : SolveRaceMember(problem, m.params, &race, /*follow_frontier=*/k > 0, caller_index);
    } catch (const std::bad_alloc&) {
      r = ResourceExhausted("out of memory in search " + std::to_string(k) + " of " + std::to_string(threads) +
                            " (SolverParams::threads: each search holds its own copy of the problem)");
    } catch (const std::exception& e) {
      r = Internal("search " + std::to_string(k) + " of " + std::to_string(threads) + ": " + e.what());
    }
    if (Decisive(r, params)) race.done.store(true);
    std::lock_guard<std::mutex> lock(mutex);
    m.result.emplace(std::move(r));
    ++finished;
    finished_cv.notify_all();
  };
  std::vector<std::thread> workers;
  std::optional<Status> start_error;
  for (unsigned k = 1; k < threads; ++k) {
    try {
      workers.emplace_back(run, k);
    } catch (const std::system_error& e) {
      start_error = ResourceExhausted("cannot start search thread " + std::to_string(k) + " of " +
                                      std::to_string(threads) + " (SolverParams::threads): " + e.what());
      race.done.store(true);
      break;
    }
  }
  if (!start_error) run(0);
  // The others may still be searching: the caller's stop request and the
  // progress report stay with this thread.
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (finished < workers.size() + (start_error ? 0 : 1)) {
      finished_cv.wait_for(lock, std::chrono::milliseconds(20));
      if (params.should_stop) {
        lock.unlock();
        if (params.should_stop()) race.done.store(true);
        lock.lock();
      }
      if (report) {
        lock.unlock();
        emit_if_due();
        lock.lock();
      }
    }
  }
  for (std::thread& t : workers) t.join();
  if (start_error) return *start_error;

  // Errors first (bad input is refused before the race: these are internal).
  for (Member& m : members)
    if (!m.result->ok()) return m.result->status();
  const auto to_problem = [&members](unsigned k, std::size_t i) { return members[k].order[i]; };

  // Nothing fits: that member's answer, its subset in the problem's indices
  // (the member that computed one, when asked).
  std::optional<unsigned> infeasible;
  for (unsigned k = 0; k < threads; ++k) {
    const SolveResult& r = **members[k].result;
    if (r.status == SolveStatus::kInfeasible &&
        (!infeasible || ((*members[*infeasible].result)->infeasible_subset.empty() && !r.infeasible_subset.empty())))
      infeasible = k;
  }
  if (infeasible) {
    const unsigned k = *infeasible;
    SolveResult& r = **members[k].result;
    SolveResult out = std::move(r);
    for (std::size_t& i : out.infeasible_subset) i = to_problem(k, i);
    std::sort(out.infeasible_subset.begin(), out.infeasible_subset.end());
    for (const Member& m : members) {
      if (&m == &members[k]) continue;
      out.nodes = internal::SaturatingAdd(out.nodes, (*m.result)->nodes);
    }
    out.seconds = seconds();
    out.threads = threads;
    if (report) emit(out.seconds);
    return out;
  }

  // The lowest plan (ties: the lower member), the highest bound of all.
  unsigned best = 0;
  for (unsigned k = 1; k < threads; ++k) {
    const SolveResult& r = **members[k].result;
    const SolveResult& b = **members[best].result;
    if (r.has_plan && (!b.has_plan || Better(r, b, capacity))) best = k;
  }
  SolveResult out = std::move(**members[best].result);
  std::uint64_t bound = out.lower_bound;
  for (unsigned k = 0; k < threads; ++k) {
    if (k == best) continue;
    const SolveResult& r = **members[k].result;
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
  out.seconds = seconds();
  out.threads = threads;
  if (out.has_plan) {
    std::vector<std::uint64_t> offsets(n, 0);
    for (std::size_t i = 0; i < n; ++i) offsets[to_problem(best, i)] = out.plan.offsets[i];
    out.plan.offsets = std::move(offsets);
    out.lower_bound = std::min(bound, out.height);
    out.plan.lower_bound = out.lower_bound;
    out.plan.seconds = out.seconds;
    TM_RETURN_IF_ERROR(ValidateOffsetsPlan(problem, out.plan, params.alignment, false)
                           .WithContext("internal error: the solver's race produced an invalid plan"));
    const bool fits = !capacity || out.height <= *capacity;
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
  if (report) emit(out.seconds);
  return out;
}

}  // namespace tensormem::solver
