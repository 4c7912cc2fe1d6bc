// SPDX-License-Identifier: Apache-2.0
// A deterministic cap on the work of the strategies whose cost grows with
// how much the tensors overlap (quadratic in the worst case): on adversarial
// inputs they return a clear error instead of running for minutes. The
// limits are set so that a strategy gives up after roughly 10-15 seconds on
// a 2-core machine; real networks stay orders of magnitude below them.
// Given the PlanParams, the budget also carries the call's time limit
// (core/deadline.h): every step spent ticks it, and Error() then says which
// of the two ran out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/deadline.h"
#include "tensormem/planning.h"
#include "tensormem/status.h"

namespace tensormem::planning {

class WorkBudget {
 public:
  explicit WorkBudget(std::uint64_t limit, const PlanParams* params = nullptr) : limit_(limit) {
    if (params) deadline_ = &own_.emplace(params->time_limit_seconds, params->should_stop);
  }
  // A deadline the strategy's set-up already started (it is not copied:
  // the set-up's time counts).
  WorkBudget(std::uint64_t limit, internal::Deadline* deadline)
      : limit_(limit), deadline_(deadline) {}
  WorkBudget(const WorkBudget&) = delete;
  WorkBudget& operator=(const WorkBudget&) = delete;
  void Spend(std::uint64_t units) {
    spent_ += units;
    if (deadline_) deadline_->Tick(units);
  }
  // The call's deadline (nullptr without PlanParams), for set-ups that read
  // it themselves (sorts, orders) before the first unit of work.
  internal::Deadline* deadline() { return deadline_; }
  bool Exhausted() const { return spent_ > limit_ || (deadline_ && deadline_->expired()); }
  // The error to return once Exhausted().
  Status Error(std::string_view strategy, std::size_t num_records) const {
    if (deadline_ && deadline_->expired())
      return DeadlineExceeded(std::string(strategy) + ": " + deadline_->Why() +
                              " was reached after " + std::to_string(spent_) + " steps on " +
                              std::to_string(num_records) + " tensors");
    // The strategies to try instead: the near-linear ones, less this one
    // (the list named min_cost_flow as fast in min_cost_flow's own message).
    std::string instead;
    for (std::string_view other : {"tightest_fit", "greedy_in_order", "equality"}) {
      if (strategy.starts_with(other)) continue;
      instead += instead.empty() ? "" : ", ";
      instead += other;
    }
    return ResourceExhausted(std::string(strategy) + " gave up after " + std::to_string(limit_) +
                             " steps on " + std::to_string(num_records) +
                             " tensors: its work grows quadratically on this input (most "
                             "tensors overlapping most others or, for greedy_by_size, each "
                             "placement bringing most of the others closer), too much to "
                             "finish in reasonable time (" + instead +
                             " are near-linear on most inputs; best keeps the cheapest plan that finished)");
  }

 private:
  std::uint64_t limit_;
  std::uint64_t spent_ = 0;
  std::optional<internal::Deadline> own_;
  internal::Deadline* deadline_ = nullptr;
};

}  // namespace tensormem::planning
