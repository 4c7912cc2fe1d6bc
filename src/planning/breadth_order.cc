#include "planning/breadth_order.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "core/checked_math.h"
#include "core/sort_until.h"
#include "planning/interval_index.h"

namespace tensormem::planning {
namespace {

bool LargerFirst(std::span<const UsageRecord> records, std::size_t a, std::size_t b) {
  return records[a].size != records[b].size ? records[a].size > records[b].size : a < b;
}

}  // namespace

std::vector<std::size_t> BreadthOrder(std::span<const UsageRecord> records) {
  return *BreadthOrder(records, nullptr);
}

std::optional<std::vector<std::size_t>> BreadthOrder(std::span<const UsageRecord> records,
                                                     internal::Deadline* deadline) {
  // Every step below reads the deadline: at 10^6 records the order takes
  // about a second, longer than a short time limit.
  auto stop = [&](std::uint64_t steps) { return deadline != nullptr && !deadline->Tick(steps); };
  const std::size_t n = records.size();
  std::vector<std::size_t> order;
  order.reserve(n);
  if (n == 0) return order;
  // Boundaries where the live set can change.
  std::vector<TaskIndex> bounds;
  bounds.reserve(2 * n);
  for (const UsageRecord& r : records) {
    bounds.push_back(r.first_task);
    bounds.push_back(r.last_task + 1);
  }
  if (!internal::StableSortUntil(bounds, std::less<TaskIndex>(), deadline)) return std::nullopt;
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  auto index_of = [&](TaskIndex t) {
    return static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), t) -
                                    bounds.begin());
  };
  // Breadth per elementary interval [bounds[k], bounds[k+1]) by a difference array.
  std::vector<internal::Uint128> breadth(bounds.size() + 1, 0);
  {
    std::vector<internal::Uint128> add(bounds.size() + 1, 0), sub(bounds.size() + 1, 0);
    for (const UsageRecord& r : records) {
      add[index_of(r.first_task)] += r.size;
      sub[index_of(r.last_task + 1)] += r.size;
    }
    internal::Uint128 live = 0;
    for (std::size_t k = 0; k < bounds.size(); ++k) {
      live += add[k];
      live -= sub[k];
      breadth[k] = live;
    }
  }
  std::vector<std::size_t> intervals(bounds.size());
  std::iota(intervals.begin(), intervals.end(), 0);
  if (!internal::StableSortUntil(
          intervals, [&](std::size_t a, std::size_t b) { return breadth[a] > breadth[b]; },
          deadline))
    return std::nullopt;

  std::vector<TaskIndex> firsts(n), lasts(n);
  for (std::size_t i = 0; i < n; ++i) {
    firsts[i] = records[i].first_task;
    lasts[i] = records[i].last_task;
  }
  IntervalIndex unassigned(firsts, lasts);
  for (std::size_t i = 0; i < n; ++i) {
    if (stop(1)) return std::nullopt;
    unassigned.Insert(i);
  }
  std::vector<std::size_t> live;
  for (std::size_t k : intervals) {
    if (order.size() == n) break;
    if (stop(1 + live.size())) return std::nullopt;
    const TaskIndex t = bounds[k];
    live.clear();
    unassigned.ForEachOverlapping(t, t, [&](std::size_t i) { live.push_back(i); });
    std::sort(live.begin(), live.end(),
              [&](std::size_t a, std::size_t b) { return LargerFirst(records, a, b); });
    for (std::size_t i : live) {
      order.push_back(i);
      unassigned.Erase(i);
    }
  }
  return order;
}

std::vector<std::size_t> BreadthOrderReference(std::span<const UsageRecord> records) {
  std::vector<std::size_t> order;
  if (records.empty()) return order;
  TaskIndex max_task = 0;
  for (const UsageRecord& r : records) max_task = std::max(max_task, r.last_task);
  std::vector<std::vector<std::size_t>> profiles(static_cast<std::size_t>(max_task) + 1);
  for (std::size_t i = 0; i < records.size(); ++i)
    for (TaskIndex t = records[i].first_task; t <= records[i].last_task; ++t)
      profiles[static_cast<std::size_t>(t)].push_back(i);
  std::vector<std::pair<internal::Uint128, std::size_t>> tasks;
  for (std::size_t t = 0; t < profiles.size(); ++t) {
    internal::Uint128 b = 0;
    for (std::size_t i : profiles[t]) b += records[i].size;
    std::stable_sort(profiles[t].begin(), profiles[t].end(),
                     [&](std::size_t a, std::size_t c) { return records[a].size > records[c].size; });
    tasks.push_back({b, t});
  }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<bool> done(records.size(), false);
  for (const auto& [b, t] : tasks)
    for (std::size_t i : profiles[t])
      if (!done[i]) {
        done[i] = true;
        order.push_back(i);
      }
  return order;
}

}  // namespace tensormem::planning
