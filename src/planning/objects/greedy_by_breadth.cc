// SPDX-License-Identifier: Apache-2.0
// greedy_by_breadth (objects): a task's breadth is the sum of the sizes of
// the tensors live at it. Tasks are visited in non-increasing breadth
// (stable), and within a task its live tensors largest first (stable); each
// tensor not yet placed goes to the object, among those none of whose
// tensors conflicts with it, that fits best: the smallest object >= the
// tensor, else the largest smaller one, which grows (lowest id among equal
// sizes in both cases); none: a new object.
//
// Reference (TFLite GPU's GreedyByBreadthAssignment, transcribed): per-task
// profiles and, per tensor, a scan of every object with an interval-set
// conflict test: O(sum of lifetimes + n x objects). It is limited to
// kReferenceMaxTasks tasks because it materialises every task. Both paths
// give up with an error after kMaxConflictTests conflict tests (inputs
// where most tensors overlap most others; see work_budget.h).
// Default: the same visiting order from BreadthOrder (O(n log n)), objects
// kept in a set ordered by (size, id); a tensor walks up from the smallest
// object >= it (then down, size group by size group, from the largest
// smaller one) and stops at the first object without a conflict, so it only
// pays for objects that conflict with it. Same result as the reference.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>
#include <set>
#include <string>

#include "planning/breadth_order.h"
#include "planning/objects/objects_strategies.h"
#include "planning/objects/work_budget.h"

namespace tensormem::planning {
namespace {

constexpr TaskIndex kReferenceMaxTasks = 10'000'000;
// Conflict tests before giving up (about 10 s).
constexpr std::uint64_t kMaxConflictTests = 300'000'000;

using Intervals = std::set<std::pair<TaskIndex, TaskIndex>>;  // disjoint, by first task

// TFLite's test: the object's intervals are disjoint, so only the first one
// starting at or after `first` and the one before it can overlap.
bool Overlaps(const Intervals& intervals, const UsageRecord& r) {
  auto it = intervals.lower_bound({r.first_task, r.last_task});
  if (it != intervals.end() && it->first <= r.last_task) return true;
  return it != intervals.begin() && std::prev(it)->second >= r.first_task;
}

Result<ObjectsPlan> Reference(std::span<const UsageRecord> records, const PlanParams& params) {
  WorkBudget budget(kMaxConflictTests, &params);
  ObjectsPlan plan;
  plan.object_of.assign(records.size(), 0);
  std::vector<Intervals> intervals;
  for (std::size_t i : BreadthOrderReference(records)) {
    const UsageRecord& r = records[i];
    const std::size_t num_objects = plan.object_sizes.size();
    budget.Spend(num_objects);
    if (budget.Exhausted()) return budget.Error("greedy_by_breadth (reference)", records.size());
    std::size_t best = num_objects;
    for (std::size_t object = 0; object < num_objects; ++object) {
      if (best != num_objects) {
        const std::uint64_t best_size = plan.object_sizes[best];
        const std::uint64_t size = plan.object_sizes[object];
        if (best_size < r.size) {
          if (size <= best_size) continue;
        } else if (size < r.size || size >= best_size) {
          continue;
        }
      }
      if (Overlaps(intervals[object], r)) continue;
      best = object;
    }
    if (best == num_objects) {
      plan.object_sizes.push_back(r.size);
      intervals.emplace_back();
    }
    intervals[best].insert({r.first_task, r.last_task});
    plan.object_sizes[best] = std::max(plan.object_sizes[best], r.size);
    plan.object_of[i] = best;
  }
  return plan;
}

// One object's lifetimes for the default path: disjoint, by first task, in
// blocks of at most kBlock contiguous entries, with each block's first task
// in one array. A test is two binary searches in contiguous memory, where a
// std::set took about fifteen dependent cache misses (a third of the
// strategy's time on gpt2_medium_generate and at 10^6 records). The same
// answer as Overlaps above: the interval with the latest first task <= l is,
// the intervals being disjoint, the one that ends last among those starting
// by l.
class FlatIntervals {
 public:
  bool Overlaps(const UsageRecord& r) const {
    const std::size_t b = BlockOf(r.last_task);
    if (b == kNone) return false;
    const Block& block = blocks_[b];
    auto it = std::upper_bound(block.begin(), block.end(), r.last_task,
                               [](TaskIndex t, const Interval& x) { return t < x.first; });
    return std::prev(it)->second >= r.first_task;  // the block's first starts by r.last_task
  }
  void Insert(const UsageRecord& r) {
    const Interval x{r.first_task, r.last_task};
    std::size_t b = BlockOf(r.first_task);
    if (b == kNone) {  // before every interval: the first block's front
      if (blocks_.empty()) {
        blocks_.emplace_back();
        firsts_.push_back(x.first);
      }
      b = 0;
      firsts_[0] = x.first;
    }
    Block& block = blocks_[b];
    block.insert(std::upper_bound(block.begin(), block.end(), x), x);
    if (block.size() > kBlock) {
      Block upper(block.begin() + kBlock / 2, block.end());
      block.resize(kBlock / 2);
      firsts_.insert(firsts_.begin() + static_cast<std::ptrdiff_t>(b) + 1, upper.front().first);
      blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(b) + 1, std::move(upper));
    }
  }

 private:
  using Interval = std::pair<TaskIndex, TaskIndex>;
  using Block = std::vector<Interval>;
  static constexpr std::size_t kBlock = 64;
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  // The last block whose first interval starts by t (kNone: none).
  std::size_t BlockOf(TaskIndex t) const {
    const auto it = std::upper_bound(firsts_.begin(), firsts_.end(), t);
    return it == firsts_.begin() ? kNone : static_cast<std::size_t>(it - firsts_.begin()) - 1;
  }
  std::vector<TaskIndex> firsts_;
  std::vector<Block> blocks_;
};

Result<ObjectsPlan> Fast(std::span<const UsageRecord> records, const PlanParams& params) {
  WorkBudget budget(kMaxConflictTests, &params);
  using Key = std::pair<std::uint64_t, std::size_t>;  // (size, id)
  ObjectsPlan plan;
  plan.object_of.assign(records.size(), 0);
  std::vector<FlatIntervals> intervals;
  std::set<Key> objects;
  std::uint64_t tests = 0;
  auto free_of_conflict = [&](std::size_t object, const UsageRecord& r) {
    ++tests;
    return !intervals[object].Overlaps(r);
  };
  const std::optional<std::vector<std::size_t>> order = BreadthOrder(records, budget.deadline());
  if (!order) return budget.Error("greedy_by_breadth", records.size());
  for (std::size_t i : *order) {
    const UsageRecord& r = records[i];
    budget.Spend(1 + tests);
    tests = 0;
    if (budget.Exhausted()) return budget.Error("greedy_by_breadth", records.size());
    std::size_t best = plan.object_sizes.size();
    // The smallest object >= r without a conflict (lowest id on equal size).
    for (auto it = objects.lower_bound({r.size, 0}); it != objects.end(); ++it) {
      if (free_of_conflict(it->second, r)) {
        best = it->second;
        break;
      }
    }
    // Else the largest smaller one: size groups from the top, lowest id first.
    if (best == plan.object_sizes.size()) {
      auto group_end = objects.lower_bound({r.size, 0});
      while (group_end != objects.begin() && best == plan.object_sizes.size()) {
        const std::uint64_t size = std::prev(group_end)->first;
        auto group_begin = objects.lower_bound({size, 0});
        for (auto it = group_begin; it != group_end; ++it) {
          if (free_of_conflict(it->second, r)) {
            best = it->second;
            break;
          }
        }
        group_end = group_begin;
      }
    }
    if (best == plan.object_sizes.size()) {
      plan.object_sizes.push_back(r.size);
      intervals.emplace_back();
      objects.insert({r.size, best});
    } else if (plan.object_sizes[best] < r.size) {
      objects.erase({plan.object_sizes[best], best});
      plan.object_sizes[best] = r.size;
      objects.insert({r.size, best});
    }
    intervals[best].Insert(r);
    plan.object_of[i] = best;
  }
  return plan;
}

}  // namespace

Result<ObjectsPlan> GreedyByBreadthObjects(std::span<const UsageRecord> records,
                                           const PlanParams& params) {
  if (!params.reference) return Fast(records, params);
  TaskIndex max_task = 0;
  for (const UsageRecord& r : records) max_task = std::max(max_task, r.last_task);
  if (max_task >= kReferenceMaxTasks)
    return ResourceExhausted("greedy_by_breadth reference path materialises every task; " +
                           std::to_string(max_task + 1) + " tasks exceed its limit of " +
                           std::to_string(kReferenceMaxTasks) + " (use the default path)");
  return Reference(records, params);
}

}  // namespace tensormem::planning
