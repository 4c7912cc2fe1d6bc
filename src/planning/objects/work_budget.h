// A deterministic cap on the work of the strategies whose cost grows with
// how much the tensors overlap (quadratic in the worst case): on adversarial
// inputs they return a clear error instead of running for minutes. The
// limits are set so that a strategy gives up after roughly 10-15 seconds on
// a 2-core machine; real networks stay orders of magnitude below them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tensormem/status.h"

namespace tensormem::planning {

class WorkBudget {
 public:
  explicit WorkBudget(std::uint64_t limit) : limit_(limit) {}
  void Spend(std::uint64_t units) { spent_ += units; }
  bool Exhausted() const { return spent_ > limit_; }
  // The error to return once Exhausted().
  Status Error(std::string_view strategy, std::size_t num_records) const {
    return ResourceExhausted(std::string(strategy) + " gave up after " + std::to_string(limit_) +
                             " steps on " + std::to_string(num_records) +
                             " tensors: they overlap too much for it to finish in reasonable "
                             "time (greedy_in_order, equality and min_cost_flow stay fast)");
  }

 private:
  std::uint64_t limit_;
  std::uint64_t spent_ = 0;
};

}  // namespace tensormem::planning
