// SPDX-License-Identifier: Apache-2.0
// best (offsets), its heuristic part: run every fast offset strategy and
// keep the smallest arena. Planning cost is the sum of theirs, all
// near-linear on real networks. from_objects (greedy_best objects laid back
// to back) joins only up to 2,000 buffers: it never won on the MiniMalloc
// instances, the 20 ONNX models or the allocation traces, and above that
// size its objects pass costs more than the best-fit orders together.
// A plan at the lower bound (the peak live bytes) is optimal and ends the
// race, so the candidates run in the order that reaches it soonest on the
// shared traces: greedy_in_order (no interval index and no sort: a tenth to
// a quarter of any other's time, and the only one at the bound on
// gpt2_medium_generate), greedy_by_breadth (at the bound on 7 of the 10
// traces, every one where greedy_by_size is), greedy_by_size, arena.
// Between plans above the bound a tie keeps greedy_by_size, then
// greedy_by_breadth, then arena, then greedy_in_order: a ranking apart from
// the run order, the one best had before greedy_in_order and breadth moved
// up, so that the exact polish still starts from the same plans.
// A candidate that gives up on its work budget (ResourceExhausted) is
// skipped, never the whole plan. The time limit covers every candidate:
// once it passes, the cheapest plan of those that finished is returned
// (kDeadlineExceeded when none did). The exact polish of the winner is above
// the solver (src/strategies/best.cc); the solver starts from this plan.
// PlanParams::threads > 1 runs the candidates on that many threads (each
// with what is left of the one time limit) and then reads their results in
// list order, as one thread would have: the same plan, sooner (unless the
// limit passes: then a candidate one thread would not have reached may
// have finished).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "core/deadline.h"
#include "tensormem/lower_bounds.h"
#include "planning/offsets/offsets_strategies.h"

namespace tensormem::planning {

Result<OffsetsPlan> BestHeuristicOffsets(const Problem& problem, const PlanParams& params) {
  return BestHeuristicOffsets(problem, params, nullptr);
}

namespace {

using Fn = Result<OffsetsPlan> (*)(const Problem&, const PlanParams&);
struct Candidate {
  Fn fn;
  std::string_view name;  // the offsets dispatcher's, which sits above
  int tie_rank;           // between equal plans above the bound, the lower wins
};

unsigned ThreadsFor(const PlanParams& params) {
  if (params.threads > 0) return params.threads;
  return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxPlanThreads);
}

using CandidateResults = std::vector<std::optional<Result<OffsetsPlan>>>;

// The candidates on threads: what the workers share. Each worker takes the
// next candidate in list order with what is left of the one time limit. A
// plan at the lower bound stops the candidates after it (they could only
// tie with an optimal plan); the caller's should_stop is polled on the
// calling thread only (a binding's Ctrl-C check must run on it).
class ThreadRace {
 public:
  ThreadRace(std::span<const Candidate> candidates, const Problem& problem, const PlanParams& params,
             const internal::Deadline& deadline, std::uint64_t lower_bound, unsigned threads)
      : candidates_(candidates), problem_(problem), params_(params), deadline_(deadline),
        lower_bound_(lower_bound), threads_(threads), results_(candidates.size()),
        last_needed_(candidates.size()) {}

  // results[i] is empty for a candidate skipped after a plan at the bound.
  // Nullopt when not even one thread could start.
  std::optional<CandidateResults> Run() {
    std::vector<std::thread> workers;
    for (unsigned k = 0; k < std::min<std::size_t>(threads_, candidates_.size()); ++k) {
      try {
        std::lock_guard<std::mutex> lock(mutex_);
        workers.emplace_back([this] { Work(); });
        ++running_;
      } catch (const std::system_error&) {
        break;  // fewer threads: the started ones take every candidate
      }
    }
    if (workers.empty()) return std::nullopt;
    WaitPollingStop();
    for (std::thread& t : workers) t.join();
    return std::move(results_);
  }

 private:
  void Work() {
    const std::size_t n = candidates_.size();
    for (std::size_t i = next_.fetch_add(1); i < n; i = next_.fetch_add(1)) {
      if (i > last_needed_.load()) continue;
      Result<OffsetsPlan> r = RunOne(i);
      if (r.ok() && r->total <= lower_bound_) {
        std::size_t was = last_needed_.load();
        while (i < was && !last_needed_.compare_exchange_weak(was, i)) {
        }
      }
      std::lock_guard<std::mutex> lock(mutex_);
      results_[i].emplace(std::move(r));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    done_cv_.notify_all();
  }

  // Candidate i on this thread. An exception must not leave a thread (it
  // would end the process): it becomes the candidate's error.
  Result<OffsetsPlan> RunOne(std::size_t i) {
    PlanParams p = params_;
    p.threads = 1;
    p.time_limit_seconds = deadline_.ForNested();
    p.should_stop = [this, i] { return stop_all_.load() || i > last_needed_.load(); };
    try {
      return candidates_[i].fn(problem_, p);
    } catch (const std::bad_alloc&) {
      return ResourceExhausted("best: out of memory in " + std::string(candidates_[i].name) + " (PlanParams::threads " +
                               std::to_string(threads_) + ": each candidate holds its own state)");
    } catch (const std::exception& e) {
      return Internal("best: " + std::string(candidates_[i].name) + ": " + e.what());
    }
  }

  // Until every worker is done, asking the caller's should_stop on this thread.
  void WaitPollingStop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (running_ > 0) {
      done_cv_.wait_for(lock, std::chrono::milliseconds(20));
      if (params_.should_stop) {
        lock.unlock();
        if (params_.should_stop()) stop_all_.store(true);
        lock.lock();
      }
    }
  }

  std::span<const Candidate> candidates_;
  const Problem& problem_;
  const PlanParams& params_;
  const internal::Deadline& deadline_;
  const std::uint64_t lower_bound_;
  const unsigned threads_;
  CandidateResults results_;
  std::atomic<std::size_t> next_{0};
  std::atomic<std::size_t> last_needed_;  // candidates after this one are not
  std::atomic<bool> stop_all_{false};
  std::mutex mutex_;
  std::condition_variable done_cv_;
  std::size_t running_ = 0;
};

// The smallest plan so far and its candidate.
struct BestSoFar {
  std::optional<OffsetsPlan> plan;
  std::string winner;
  int winner_rank = 0;
  Status stopped;  // why a candidate did not finish in time

  void Offer(OffsetsPlan candidate, const Candidate& c) {
    if (plan && candidate.total > plan->total) return;
    if (plan && candidate.total == plan->total && c.tie_rank >= winner_rank) return;
    plan = std::move(candidate);
    winner = std::string(c.name);
    winner_rank = c.tie_rank;
  }
};

// The candidates' results in list order (from the threads in `ran`, else
// each run here with what is left of the limit) until one is at the bound
// or the limit passes. An error other than the deadline is returned.
Status TakeCandidates(std::span<const Candidate> candidates, const Problem& problem, const PlanParams& params,
                      internal::Deadline& deadline, std::uint64_t lower_bound,
                      std::optional<CandidateResults>& ran, BestSoFar& best) {
  PlanParams p = params;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (best.plan && best.plan->total <= lower_bound) break;
    // A candidate is skipped only after a plan at the bound, where this
    // loop has already stopped.
    if (ran && !(*ran)[i]) return Internal("best: " + std::string(c.name) + " has no result");
    if (!ran && deadline.Expired()) {
      best.stopped = DeadlineExceeded(deadline.Why() + " was reached before " + std::string(c.name) + " ran");
      break;
    }
    if (!ran) p.time_limit_seconds = deadline.ForNested();
    Result<OffsetsPlan> plan = ran ? std::move(*(*ran)[i]) : c.fn(problem, p);
    if (!plan.ok() && plan.status().code() == StatusCode::kDeadlineExceeded) {
      best.stopped = plan.status().WithContext(std::string(c.name));
      break;
    }
    if (!plan.ok()) return plan.status();
    best.Offer(std::move(*plan), c);
  }
  return Status::Ok();
}

// from_objects (greedy_best objects laid back to back), when it may join:
// no fixed offsets (it cannot take them), up to 2,000 buffers, the others
// above the bound and time left.
Status TryFromObjects(const Problem& problem, const PlanParams& params, internal::Deadline& deadline,
                      std::uint64_t lower_bound, BestSoFar& best) {
  bool has_fixed = false;
  for (const Buffer& b : problem.buffers) has_fixed |= b.fixed_offset.has_value();
  if (has_fixed || problem.buffers.size() > 2'000 || best.plan->total <= lower_bound || !best.stopped.ok() ||
      deadline.Expired())
    return Status::Ok();
  PlanParams p = params;
  p.from_objects = ObjectsStrategy::kGreedyBest;
  p.time_limit_seconds = deadline.ForNested();
  Result<OffsetsPlan> plan = FromObjectsOffsets(problem, p);
  if (!plan.ok() && plan.status().code() != StatusCode::kResourceExhausted &&
      plan.status().code() != StatusCode::kDeadlineExceeded)
    return plan.status();
  if (plan.ok() && plan->total < best.plan->total) {
    best.plan = std::move(*plan);
    best.winner = "from_objects";
  }
  return Status::Ok();
}

}  // namespace

Result<OffsetsPlan> BestHeuristicOffsets(const Problem& problem, const PlanParams& params,
                                         bool* time_limit_hit) {
  const Candidate candidates[] = {
      {GreedyInOrderOffsets, "greedy_in_order", 3},
      {GreedyByBreadthOffsets, "greedy_by_breadth", 1},
      {GreedyBySizeOffsets, "greedy_by_size", 0},
      {ArenaOffsets, "arena", 2},
  };
  // One deadline for all candidates: each gets what is left of it.
  internal::Deadline deadline(params.time_limit_seconds, params.should_stop);
  const std::uint64_t lower_bound = PeakLiveBytes(problem, params.alignment);
  std::optional<CandidateResults> ran;
  if (const unsigned threads = ThreadsFor(params); threads > 1)
    ran = ThreadRace(candidates, problem, params, deadline, lower_bound, threads).Run();
  BestSoFar best;
  TM_RETURN_IF_ERROR(TakeCandidates(candidates, problem, params, deadline, lower_bound, ran, best));
  if (!best.plan) return DeadlineExceeded("no candidate finished: " + best.stopped.message());
  TM_RETURN_IF_ERROR(TryFromObjects(problem, params, deadline, lower_bound, best));
  if (time_limit_hit != nullptr) *time_limit_hit = !best.stopped.ok() || deadline.Expired();
  if (!best.stopped.ok()) best.winner += ", time limit hit";
  best.plan->strategy = best.winner;
  best.plan->lower_bound = std::max(best.plan->lower_bound, lower_bound);
  return std::move(*best.plan);
}

}  // namespace tensormem::planning
