// SPDX-License-Identifier: Apache-2.0
// The time limit of one planning call (PlanParams::time_limit_seconds and
// should_stop), read by every strategy whose work grows with the input.
// Tick() is called once per unit of work (a placement); the clock and the
// stop hook are read only every 1,024 units or 2^16 elementary steps, so the
// check costs nothing measurable, and no decision depends on the clock
// except stopping.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

namespace tensormem::internal {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // seconds: the limit from now; 0 (or below) and +infinity mean none (0 is
  // PlanParams's "heuristics untimed, no search"), kept for ForNested().
  explicit Deadline(double seconds, std::function<bool()> should_stop = {})
      : seconds_(seconds), should_stop_(std::move(should_stop)) {
    limited_ = seconds > 0 && seconds < 1e9;
    if (limited_)
      deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(seconds));
  }

  // One unit of work that cost about `steps` elementary steps. False once
  // the deadline has passed or the hook asked to stop (and from then on).
  bool Tick(std::uint64_t steps = 1) {
    if (expired_) return false;
    ++units_;
    steps_ += steps;
    if ((units_ & 1023) == 0 || steps_ >= (std::uint64_t{1} << 16)) {
      steps_ = 0;
      return !Expired();
    }
    return true;
  }

  // Reads the clock (and the hook) now.
  bool Expired() {
    if (expired_) return true;
    if (!limited_ && !should_stop_) return false;
    if ((limited_ && Clock::now() >= deadline_) || (should_stop_ && should_stop_())) expired_ = true;
    return expired_;
  }

  // The time_limit_seconds to hand a nested planning call: what is left
  // (never 0, which would mean "none"), or the caller's own value.
  double ForNested() const {
    if (!limited_) return seconds_;
    const double left = std::chrono::duration<double>(deadline_ - Clock::now()).count();
    return std::max(left, 1e-9);
  }

  // Whether a Tick() or Expired() has seen the limit pass (no clock read).
  bool expired() const { return expired_; }

  // "the time limit of 1 s" or "the stop request", for error messages.
  std::string Why() const {
    if (limited_ && Clock::now() >= deadline_) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "the time limit of %.3g s", seconds_);
      return buf;
    }
    return "the stop request (PlanParams::should_stop)";
  }

 private:
  double seconds_;
  std::function<bool()> should_stop_;
  bool limited_ = false;
  Clock::time_point deadline_{};
  bool expired_ = false;
  std::uint64_t units_ = 0;
  std::uint64_t steps_ = 0;
};

}  // namespace tensormem::internal
