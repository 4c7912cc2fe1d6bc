// SPDX-License-Identifier: Apache-2.0
// best (objects), ours: run every fast strategy and keep the cheapest plan
// (ties: the earlier in the list below); plan.strategy names the winner,
// e.g. "best(greedy_by_size)". greedy_best is not run on its own: it is the
// better of two candidates already in the list. tightest_fit runs first: it
// takes milliseconds and often reaches the lower bound, which ends the race.
//
// So that best stays usable on large inputs, candidates predicted to be slow
// are skipped: min_cost_flow above kMinCostFlowMaxRecords records (it takes
// seconds there and is rarely the cheapest), and greedy_by_size and
// greedy_by_breadth when records x (most tensors live at once) exceeds
// kMaxDensityWork (inputs where most tensors overlap most others, on which
// they are quadratic). A candidate that gives up on its work budget
// (ResourceExhausted) is skipped too; every other error is returned. The
// time limit covers every candidate: once it passes, the cheapest plan of
// those that finished is returned (kDeadlineExceeded when none did). Until
// one has finished, a candidate gets three quarters of the time left, and
// one that runs out of that share is skipped (the plan's strategy then
// says "time limit hit"). greedy_in_order, which reads no limit and takes
// a small part of any other's time, runs before the race, so that a plan
// is there whenever any time was left; its plan counts at its place in the
// list. A plan at the lower bound ends the race: a later candidate could
// only tie, and ties keep the earlier plan anyway. It runs on one thread whatever
// PlanParams::threads says: greedy_by_size's work budget grows with the time
// it is given, so candidates on threads, each given all that is left instead
// of these shares, could return another plan than one thread.
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "core/deadline.h"
#include "core/positional_maximums.h"
#include "planning/objects/objects_strategies.h"

namespace tensormem::planning {
namespace {

constexpr std::size_t kMinCostFlowMaxRecords = 20'000;
constexpr std::uint64_t kMaxDensityWork = 200'000'000;

}  // namespace

namespace {

using Fn = Result<ObjectsPlan> (*)(std::span<const UsageRecord>, const PlanParams&);
struct Candidate {
  Fn fn;
  ObjectsStrategy strategy;
  bool run;
};

// The race, its steps over the state they share: one deadline for all
// candidates (each gets what is left of it), the bound, the best plan so far.
class ObjectsRace {
 public:
  ObjectsRace(std::span<const UsageRecord> records, const PlanParams& params)
      : records_(records), deadline_(params.time_limit_seconds, params.should_stop), p_(params) {}

  // greedy_in_order runs first, aside: O(n log n) with no work budget to
  // run out of, a small part of any other candidate's time, so best has a
  // plan whenever a little time is left (on 2 x 10^6 network-like records
  // every other candidate ran out of its share, and best failed). Its plan
  // takes part at its place in the list: whenever the race gets there, the
  // winner is what it would be without this. (It reads no time limit: a
  // stop request or a limit already past skips it.)
  void RunInOrderAside() {
    if (!deadline_.Expired()) in_order_ = GreedyInOrderObjects(records_, p_);
  }

  // The positional maximums give the bound that ends the race, how dense
  // the input is, and greedy_by_size's positions: computed once, within the
  // time limit (about a second at 10^6 records).
  void ComputeBound() {
    bound_known_ = internal::PositionalMaximumsUntil(records_, &deadline_, &maxima_);
    lower_bound_ = internal::SumOfMaximums(maxima_);
    if (!bound_known_) stopped_ = DeadlineExceeded(deadline_.Why() + " was reached before the race began");
  }

  Status Race() {
    const bool dense = internal::SaturatingMul(records_.size(), maxima_.size()) > kMaxDensityWork;
    const Candidate candidates[] = {
        {TightestFitObjects, ObjectsStrategy::kTightestFit, true},
        {GreedyBySizeObjects, ObjectsStrategy::kGreedyBySize, !dense},
        {GreedyByBreadthObjects, ObjectsStrategy::kGreedyByBreadth, !dense},
        {MinCostFlowObjects, ObjectsStrategy::kMinCostFlow, records_.size() <= kMinCostFlowMaxRecords},
        {GreedyInOrderObjects, ObjectsStrategy::kGreedyInOrder, true},
        {EqualityObjects, ObjectsStrategy::kEquality, true},
        {NaiveObjects, ObjectsStrategy::kNaive, true},
    };
    for (const Candidate& c : candidates) {
      if (!c.run || !bound_known_) continue;
      TM_ASSIGN_OR_RETURN(const bool go_on, Run(c));
      if (!go_on) break;
    }
    return Status::Ok();
  }

  Result<ObjectsPlan> Finish() {
    // The race stopped before greedy_in_order's place: its plan still counts.
    if (in_order_ && in_order_->ok() && (!best_ || TotalSize(**in_order_) < best_total_)) {
      best_ = std::move(**in_order_);
      winner_ = std::string(Name(ObjectsStrategy::kGreedyInOrder));
    }
    if (!best_) return DeadlineExceeded("no candidate finished: " + stopped_.message());
    if (!stopped_.ok()) winner_ += ", time limit hit";
    best_->strategy = "best(" + winner_ + ")";
    // So that the dispatcher need not compute it again (it does when the
    // deadline passed first, outside the limit, as for every strategy).
    if (bound_known_) best_->lower_bound = lower_bound_;
    return std::move(*best_);
  }

 private:
  // Runs candidate c; whether the race goes on.
  Result<bool> Run(const Candidate& c) {
    if (best_ && best_total_ <= lower_bound_) return false;
    if (deadline_.Expired()) {
      stopped_ = DeadlineExceeded(deadline_.Why() + " was reached before " + std::string(Name(c.strategy)) + " ran");
      return false;
    }
    // While no candidate has a plan, one gets three quarters of what is
    // left: one that cannot finish in that (greedy_by_size, whose work
    // budget grows with its time limit, on a long generation trace) is
    // skipped and leaves the rest to the others.
    const double left = deadline_.ForNested();
    const bool share = !best_ && left > 0 && left < 1e9;
    p_.time_limit_seconds = share ? 0.75 * left : left;
    Result<ObjectsPlan> plan = c.strategy == ObjectsStrategy::kGreedyInOrder && in_order_
                                   ? *std::exchange(in_order_, std::nullopt)
                               : c.strategy == ObjectsStrategy::kGreedyBySize
                                   ? GreedyBySizeObjects(records_, p_, maxima_)
                                   : c.fn(records_, p_);
    if (!plan.ok() && plan.status().code() == StatusCode::kResourceExhausted) return true;
    if (!plan.ok() && plan.status().code() == StatusCode::kDeadlineExceeded) {
      stopped_ = plan.status().WithContext(std::string(Name(c.strategy)));
      return share && !deadline_.Expired();
    }
    if (!plan.ok()) return plan.status();
    const std::uint64_t total = TotalSize(*plan);
    if (!best_ || total < best_total_) {
      best_ = std::move(*plan);
      best_total_ = total;
      winner_ = std::string(Name(c.strategy));
    }
    return true;
  }

  std::span<const UsageRecord> records_;
  internal::Deadline deadline_;
  PlanParams p_;
  std::optional<Result<ObjectsPlan>> in_order_;
  std::vector<std::uint64_t> maxima_;
  bool bound_known_ = false;
  std::uint64_t lower_bound_ = 0;
  std::optional<ObjectsPlan> best_;
  std::uint64_t best_total_ = 0;
  std::string winner_;
  Status stopped_;  // why a candidate did not finish in time
};

}  // namespace

Result<ObjectsPlan> BestObjects(std::span<const UsageRecord> records, const PlanParams& params) {
  ObjectsRace race(records, params);
  race.RunInOrderAside();
  race.ComputeBound();
  TM_RETURN_IF_ERROR(race.Race());
  return race.Finish();
}

}  // namespace tensormem::planning
