// SPDX-License-Identifier: Apache-2.0
// The limits of one solve, shared by every search it runs: a wall-clock
// deadline, a node budget over the whole solve, and the progress report.
// Engines call Tick() once per node; the clock is read only every 256 ticks
// so the deadline costs nothing measurable, and no decision of a search
// depends on the clock except stopping.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>

#include "core/checked_math.h"
#include "tensormem/solver.h"

namespace tensormem::solver {

class SearchControl {
 public:
  using Clock = std::chrono::steady_clock;

  SearchControl(double time_limit_seconds, std::uint64_t node_limit, bool progress_to_stderr,
                std::function<void(const SolveProgress&)> on_progress, double progress_interval)
      : start_(Clock::now()),
        node_limit_(node_limit == 0 ? std::numeric_limits<std::uint64_t>::max() : node_limit),
        progress_to_stderr_(progress_to_stderr),
        on_progress_(std::move(on_progress)),
        progress_interval_(progress_interval > 0 ? progress_interval : 1.0) {
    if (time_limit_seconds < 1e9)
      deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(time_limit_seconds));
    else
      deadline_ = Clock::time_point::max();
    next_report_ = progress_interval_;
  }

  // One node that cost about `work` elementary steps (items scanned). The
  // clock is read every 256 nodes or 2^20 steps, whichever comes first, so
  // the deadline holds on huge instances too. Returns false once a limit
  // has been reached (and from then on).
  bool Tick(std::uint64_t work = 1) {
    ++nodes_;
    work_ += work;
    if (stopped_) return false;
    if (nodes_ >= node_limit_) return Stop();
    if ((nodes_ & 255) == 0 || work_ >= (std::uint64_t{1} << 20)) {
      work_ = 0;
      return Poll();
    }
    return true;
  }

  // Nodes spent by a nested solve (its own control): counted here too, so
  // the node limit covers them. False once a limit has been reached.
  bool AddNodes(std::uint64_t n) {
    nodes_ = internal::SaturatingAdd(nodes_, n);
    if (stopped_) return false;
    if (nodes_ >= node_limit_) return Stop();
    return Poll();
  }
  std::uint64_t node_limit() const { return node_limit_; }

  // Reads the clock (and reports progress when due). False once stopped.
  bool Poll() {
    if (stopped_) return false;
    const Clock::time_point now = Clock::now();
    if (now >= deadline_) return Stop();
    if (should_stop_ && should_stop_()) return Stop();
    if (progress_to_stderr_ || on_progress_) {
      const double s = std::chrono::duration<double>(now - start_).count();
      if (s >= next_report_) {
        Report(s);
        while (next_report_ <= s) next_report_ += progress_interval_;
      }
    }
    return true;
  }

  // Asked at every clock reading; true stops the search (SolverParams::should_stop).
  void SetShouldStop(std::function<bool()> should_stop) { should_stop_ = std::move(should_stop); }

  bool stopped() const { return stopped_; }
  std::uint64_t nodes() const { return nodes_; }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // What the progress report shows.
  void SetBest(bool has_plan, std::uint64_t height) {
    has_plan_ = has_plan;
    best_ = height;
  }
  void SetLowerBound(std::uint64_t lb) { lower_bound_ = lb; }

  // A nested solve's report whose plans are plans of this solve (the relay
  // probe's): shown with this solve's bound and clock, its nodes added.
  void ReportNested(const SolveProgress& nested) {
    if (nested.has_plan && (!has_plan_ || nested.best_height < best_)) {
      has_plan_ = true;
      best_ = nested.best_height;
    }
    const std::uint64_t own = nodes_;
    nodes_ = internal::SaturatingAdd(nodes_, nested.nodes);
    Report(Seconds());
    nodes_ = own;
  }

  void Report(double seconds) {
    SolveProgress p;
    p.has_plan = has_plan_;
    p.best_height = best_;
    p.lower_bound = lower_bound_;
    p.nodes = nodes_;
    p.seconds = seconds;
    if (progress_to_stderr_) PrintProgress(p);
    if (on_progress_) on_progress_(p);
  }

  // The progress line on stderr (also the race's, solver/race.h).
  static void PrintProgress(const SolveProgress& p) {
    if (p.has_plan) {
      const std::uint64_t best = p.best_height;
      const double gap = best ? static_cast<double>(best - std::min(best, p.lower_bound)) /
                                    static_cast<double>(best)
                              : 0.0;
      std::fprintf(stderr, "[solve] %8.1f s  best %llu  bound %llu  gap %.4f%%  nodes %llu\n", p.seconds,
                   static_cast<unsigned long long>(best), static_cast<unsigned long long>(p.lower_bound),
                   gap * 100, static_cast<unsigned long long>(p.nodes));
    } else {
      std::fprintf(stderr, "[solve] %8.1f s  best none  bound %llu  nodes %llu\n", p.seconds,
                   static_cast<unsigned long long>(p.lower_bound), static_cast<unsigned long long>(p.nodes));
    }
  }

 private:
  bool Stop() {
    stopped_ = true;
    return false;
  }

  Clock::time_point start_;
  Clock::time_point deadline_;
  std::uint64_t node_limit_;
  std::uint64_t nodes_ = 0;
  std::uint64_t work_ = 0;
  bool stopped_ = false;
  bool progress_to_stderr_;
  std::function<void(const SolveProgress&)> on_progress_;
  std::function<bool()> should_stop_;
  double progress_interval_;
  double next_report_;
  bool has_plan_ = false;
  std::uint64_t best_ = 0;
  std::uint64_t lower_bound_ = 0;
};

// What one search at one capacity ended with.
enum class SearchOutcome { kFound, kExhausted, kLimit };

}  // namespace tensormem::solver
