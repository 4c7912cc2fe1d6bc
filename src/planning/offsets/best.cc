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

// Runs the candidates on up to `threads` threads, each taking the next one
// in list order with what is left of the one time limit. A plan at the
// lower bound stops the candidates after it (they could only tie with an
// optimal plan); the caller's should_stop is polled on this thread only (a
// binding's Ctrl-C check must run on it). results[i] is empty for a
// candidate skipped after a plan at the bound. Nullopt when not even one
// thread could start (the caller then runs them itself).
std::optional<std::vector<std::optional<Result<OffsetsPlan>>>> RunOnThreads(
    std::span<const Candidate> candidates, const Problem& problem, const PlanParams& params,
    const internal::Deadline& deadline, std::uint64_t lower_bound, unsigned threads) {
  const std::size_t n = candidates.size();
  std::vector<std::optional<Result<OffsetsPlan>>> results(n);
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> last_needed{n};  // candidates after this one are not
  std::atomic<bool> stop_all{false};
  std::mutex mutex;
  std::condition_variable done_cv;
  std::size_t running = 0;
  const auto work = [&] {
    for (std::size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      if (i > last_needed.load()) continue;
      PlanParams p = params;
      p.threads = 1;
      p.time_limit_seconds = deadline.ForNested();
      p.should_stop = [&stop_all, &last_needed, i] { return stop_all.load() || i > last_needed.load(); };
      // An exception must not leave a thread (it would end the process).
      Result<OffsetsPlan> r = Internal("best: " + std::string(candidates[i].name) + " did not run");
      try {
        r = candidates[i].fn(problem, p);
      } catch (const std::bad_alloc&) {
        r = ResourceExhausted("best: out of memory in " + std::string(candidates[i].name) + " (PlanParams::threads " +
                              std::to_string(threads) + ": each candidate holds its own state)");
      } catch (const std::exception& e) {
        r = Internal("best: " + std::string(candidates[i].name) + ": " + e.what());
      }
      if (r.ok() && r->total <= lower_bound) {
        std::size_t was = last_needed.load();
        while (i < was && !last_needed.compare_exchange_weak(was, i)) {
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      results[i].emplace(std::move(r));
    }
    std::lock_guard<std::mutex> lock(mutex);
    --running;
    done_cv.notify_all();
  };
  std::vector<std::thread> workers;
  for (unsigned k = 0; k < std::min<std::size_t>(threads, n); ++k) {
    try {
      std::lock_guard<std::mutex> lock(mutex);
      workers.emplace_back(work);
      ++running;
    } catch (const std::system_error&) {
      break;  // fewer threads: the started ones take every candidate
    }
  }
  if (workers.empty()) return std::nullopt;
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (running > 0) {
      done_cv.wait_for(lock, std::chrono::milliseconds(20));
      if (params.should_stop) {
        lock.unlock();
        if (params.should_stop()) stop_all.store(true);
        lock.lock();
      }
    }
  }
  for (std::thread& t : workers) t.join();
  return results;
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
  PlanParams p = params;
  std::optional<OffsetsPlan> best;
  std::string winner;
  int winner_rank = 0;
  Status stopped;  // why a candidate did not finish in time
  const std::uint64_t lower_bound = PeakLiveBytes(problem, params.alignment);
  std::optional<std::vector<std::optional<Result<OffsetsPlan>>>> ran;
  if (const unsigned threads = ThreadsFor(params); threads > 1)
    ran = RunOnThreads(candidates, problem, params, deadline, lower_bound, threads);
  for (std::size_t i = 0; i < std::size(candidates); ++i) {
    const Candidate& c = candidates[i];
    if (best && best->total <= lower_bound) break;
    // A candidate is skipped only after a plan at the bound, where this
    // loop has already stopped.
    if (ran && !(*ran)[i]) return Internal("best: " + std::string(c.name) + " has no result");
    if (!ran && deadline.Expired()) {
      stopped = DeadlineExceeded(deadline.Why() + " was reached before " +
                                 std::string(c.name) + " ran");
      break;
    }
    if (!ran) p.time_limit_seconds = deadline.ForNested();
    Result<OffsetsPlan> plan = ran ? std::move(*(*ran)[i]) : c.fn(problem, p);
    if (!plan.ok() && plan.status().code() == StatusCode::kDeadlineExceeded) {
      stopped = plan.status().WithContext(std::string(c.name));
      break;
    }
    if (!plan.ok()) return plan.status();
    if (!best || plan->total < best->total || (plan->total == best->total && c.tie_rank < winner_rank)) {
      best = std::move(*plan);
      winner = std::string(c.name);
      winner_rank = c.tie_rank;
    }
  }
  if (!best) return DeadlineExceeded("no candidate finished: " + stopped.message());
  // from_objects cannot take fixed offsets; elsewhere it is a fair candidate.
  bool has_fixed = false;
  for (const Buffer& b : problem.buffers) has_fixed |= b.fixed_offset.has_value();
  if (!has_fixed && problem.buffers.size() <= 2'000 && best->total > lower_bound && stopped.ok() &&
      !deadline.Expired()) {
    p.from_objects = ObjectsStrategy::kGreedyBest;
    p.time_limit_seconds = deadline.ForNested();
    Result<OffsetsPlan> plan = FromObjectsOffsets(problem, p);
    if (!plan.ok() && plan.status().code() != StatusCode::kResourceExhausted &&
        plan.status().code() != StatusCode::kDeadlineExceeded)
      return plan.status();
    if (plan.ok() && plan->total < best->total) {
      best = std::move(*plan);
      winner = "from_objects";
    }
  }
  if (time_limit_hit != nullptr) *time_limit_hit = !stopped.ok() || deadline.Expired();
  if (!stopped.ok()) winner += ", time limit hit";
  best->strategy = winner;
  best->lower_bound = std::max(best->lower_bound, lower_bound);
  return std::move(*best);
}

}  // namespace tensormem::planning
