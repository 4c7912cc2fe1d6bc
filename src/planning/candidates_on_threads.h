// Runs a best strategy's candidates on threads (internal; offsets best,
// PlanParams::threads; objects best stays on one thread: greedy_by_size's
// work budget grows with the time it is given, so candidates given all
// that is left, instead of one thread's shares, could return other plans). Each thread takes the next candidate
// in list order with what is left of the one time limit. A plan at the
// lower bound stops the candidates after it (they could only tie, and a tie
// keeps the earlier plan), and the caller's should_stop is polled on the
// calling thread only (a binding's Ctrl-C check must run on it). The caller
// then reads the results in list order, as one thread would have.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "core/deadline.h"
#include "tensormem/planning.h"
#include "tensormem/status.h"

namespace tensormem::planning {

// PlanParams::threads with 0 resolved to the hardware's.
inline unsigned ThreadsFor(const PlanParams& params) {
  if (params.threads > 0) return params.threads;
  return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxPlanThreads);
}

// run(i, params) plans candidate i; at_bound(plan) says a plan reached the
// lower bound; name(i) names candidate i in errors. results[i] is empty for
// a candidate skipped after a plan at the bound. Nullopt when not even one
// thread could start (the caller then runs them itself).
template <typename Plan, typename Run, typename AtBound, typename Name>
std::optional<std::vector<std::optional<Result<Plan>>>> RunCandidatesOnThreads(
    std::size_t n, unsigned threads, const PlanParams& params, const internal::Deadline& deadline, Run&& run,
    AtBound&& at_bound, Name&& name) {
  std::vector<std::optional<Result<Plan>>> results(n);
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
      Result<Plan> r = Internal("best: " + std::string(name(i)) + " did not run");
      try {
        r = run(i, p);
      } catch (const std::bad_alloc&) {
        r = ResourceExhausted("best: out of memory in " + std::string(name(i)) + " (PlanParams::threads " +
                              std::to_string(threads) + ": each candidate holds its own state)");
      } catch (const std::exception& e) {
        r = Internal("best: " + std::string(name(i)) + ": " + e.what());
      }
      if (r.ok() && at_bound(*r)) {
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

}  // namespace tensormem::planning
