// SPDX-License-Identifier: Apache-2.0
#include "tensormem/validator.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <tuple>

#include "core/checked_math.h"

namespace tensormem {
namespace {

std::string Tensor(std::size_t i) { return "tensor " + std::to_string(i); }

std::string Buf(const Problem& p, std::size_t i) {
  return "buffer " + std::to_string(i) + " (id '" + p.buffers[i].id + "')";
}

// Tensors on one object must be pairwise disjoint in time: sorted by first
// task, each must end before the next starts.
template <typename Record>
Status CheckObjectTimelines(std::span<const Record> records,
                            const std::vector<std::size_t>& object_of, std::size_t num_objects,
                            bool (*occupies)(const Record&)) {
  // (object, first task, index) keys sort in memory order: sorting indices
  // through the records was a tenth of planning 2 x 10^6 records.
  struct Key {
    std::size_t object;
    TaskIndex first;
    std::size_t index;
    bool operator<(const Key& o) const {
      return std::tie(object, first, index) < std::tie(o.object, o.first, o.index);
    }
  };
  std::vector<Key> order;
  order.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i)
    if (occupies(records[i])) order.push_back({object_of[i], records[i].first_task, i});
  std::sort(order.begin(), order.end());
  for (std::size_t k = 1; k < order.size(); ++k) {
    const std::size_t a = order[k - 1].index, b = order[k].index;
    if (object_of[a] != object_of[b]) continue;
    if (records[a].ConflictsWith(records[b]))
      return InvalidArgument(Tensor(a) + " [" + std::to_string(records[a].first_task) + ", " +
                             std::to_string(records[a].last_task) + "] and " + Tensor(b) + " [" +
                             std::to_string(records[b].first_task) + ", " +
                             std::to_string(records[b].last_task) +
                             "] share object " + std::to_string(object_of[a]) +
                             " but are live at the same time");
  }
  (void)num_objects;
  return Status::Ok();
}

template <typename Plan>
Status CheckObjectIds(std::size_t num_records, const Plan& plan) {
  if (plan.object_of.size() != num_records)
    return InvalidArgument("plan has " + std::to_string(plan.object_of.size()) +
                           " object ids for " + std::to_string(num_records) + " tensors");
  for (std::size_t i = 0; i < num_records; ++i)
    if (plan.object_of[i] >= plan.object_sizes.size())
      return InvalidArgument(Tensor(i) + " is on object " + std::to_string(plan.object_of[i]) +
                             " but the plan has " + std::to_string(plan.object_sizes.size()) +
                             " objects");
  return Status::Ok();
}

}  // namespace

Status ValidateObjectsPlan(std::span<const UsageRecord> records, const ObjectsPlan& plan) {
  TM_RETURN_IF_ERROR(CheckObjectIds(records.size(), plan));
  for (std::size_t i = 0; i < records.size(); ++i)
    if (plan.object_sizes[plan.object_of[i]] < records[i].size)
      return InvalidArgument(Tensor(i) + " of " + std::to_string(records[i].size) +
                             " bytes is on object " + std::to_string(plan.object_of[i]) +
                             " of only " + std::to_string(plan.object_sizes[plan.object_of[i]]) +
                             " bytes");
  return CheckObjectTimelines<UsageRecord>(
      records, plan.object_of, plan.object_sizes.size(),
      [](const UsageRecord& r) { return r.size > 0; });
}

Status ValidateObjectsPlan(std::span<const ExtentRecord> records, const ExtentObjectsPlan& plan) {
  TM_RETURN_IF_ERROR(CheckObjectIds(records.size(), plan));
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Extent& obj = plan.object_sizes[plan.object_of[i]];
    if (!obj.Covers(records[i].size))
      return InvalidArgument(Tensor(i) + " of extent " + records[i].size.ToString() +
                             " is on object " + std::to_string(plan.object_of[i]) +
                             " of extent " + obj.ToString() +
                             ", which does not cover it in every dimension");
  }
  return CheckObjectTimelines<ExtentRecord>(
      records, plan.object_of, plan.object_sizes.size(),
      [](const ExtentRecord& r) { return r.size.Elements() > 0; });
}

namespace {

// Buffer i at its planned offset: its fixed offset kept, its alignment, no
// overflow, within the plan's total.
Status CheckPlacement(const Problem& problem, const OffsetsPlan& plan, std::uint64_t alignment, std::size_t i) {
  const Buffer& b = problem.buffers[i];
  const std::uint64_t off = plan.offsets[i];
  if (b.fixed_offset && *b.fixed_offset != off)
    return InvalidArgument(Buf(problem, i) + " has fixed offset " + std::to_string(*b.fixed_offset) +
                           " but the plan puts it at " + std::to_string(off));
  if (off % alignment != 0 || (b.alignment > 0 && off % b.alignment != 0))
    return InvalidArgument(Buf(problem, i) + " at offset " + std::to_string(off) + " breaks its alignment of " +
                           std::to_string(std::max<std::uint64_t>(alignment, b.alignment)));
  std::uint64_t end;
  if (!internal::CheckedAdd(off, b.size, &end))
    return OutOfRange(Buf(problem, i) + ": offset + size overflows 64 bits");
  if (b.size > 0 && end > plan.total)
    return InvalidArgument(Buf(problem, i) + " ends at " + std::to_string(end) + ", beyond the plan's total of " +
                           std::to_string(plan.total));
  return Status::Ok();
}

// A buffer's segment at its planned offset.
struct PlacedRect {
  TaskIndex first, last;
  std::uint64_t lo, hi;  // absolute bytes [lo, hi)
  std::size_t buffer;
};

Status Overlap(const Problem& problem, const PlacedRect& o, const PlacedRect& cur) {
  const TaskIndex t = std::max(cur.first, o.first);
  return InvalidArgument(Buf(problem, o.buffer) + " and " + Buf(problem, cur.buffer) + " overlap: both live at task " +
                         std::to_string(t) + ", bytes [" + std::to_string(o.lo) + ", " + std::to_string(o.hi) +
                         ") and [" + std::to_string(cur.lo) + ", " + std::to_string(cur.hi) + ")");
}

// No two placed segments overlap: a sweep over time with the active
// segments ordered by address; a new segment overlaps an active one iff it
// overlaps its neighbour on either side.
Status CheckNoOverlap(const Problem& problem, const OffsetsPlan& plan) {
  std::vector<PlacedRect> rects;
  rects.reserve(problem.buffers.size());
  for (std::size_t i = 0; i < problem.buffers.size(); ++i)
    for (const Segment& s : Occupancy(problem.buffers[i]))
      rects.push_back({s.first_task, s.last_task, plan.offsets[i] + s.lo, plan.offsets[i] + s.hi, i});
  std::vector<std::size_t> by_first(rects.size()), by_last(rects.size());
  std::iota(by_first.begin(), by_first.end(), 0);
  std::iota(by_last.begin(), by_last.end(), 0);
  std::sort(by_first.begin(), by_first.end(),
            [&](std::size_t a, std::size_t b) { return rects[a].first < rects[b].first; });
  std::sort(by_last.begin(), by_last.end(), [&](std::size_t a, std::size_t b) { return rects[a].last < rects[b].last; });
  using Key = std::pair<std::uint64_t, std::size_t>;  // (lo, rect index)
  std::set<Key> active;
  std::size_t r = 0;
  for (std::size_t k = 0; k < by_first.size(); ++k) {
    const PlacedRect& cur = rects[by_first[k]];
    // Retire rects that ended before this one starts.
    while (r < by_last.size() && rects[by_last[r]].last < cur.first) {
      active.erase({rects[by_last[r]].lo, by_last[r]});
      ++r;
    }
    auto it = active.lower_bound({cur.lo, 0});
    if (it != active.end() && rects[it->second].lo < cur.hi) return Overlap(problem, rects[it->second], cur);
    if (it != active.begin()) {
      auto prev = std::prev(it);
      if (rects[prev->second].hi > cur.lo) return Overlap(problem, rects[prev->second], cur);
    }
    active.insert({cur.lo, by_first[k]});
  }
  return Status::Ok();
}

}  // namespace

Status ValidateOffsetsPlan(const Problem& problem, const OffsetsPlan& plan,
                           std::uint64_t alignment, bool enforce_capacity) {
  const std::size_t n = problem.buffers.size();
  TM_RETURN_IF_ERROR(ValidateAlignment(alignment, "ValidateOffsetsPlan"));
  if (plan.offsets.size() != n)
    return InvalidArgument("plan has " + std::to_string(plan.offsets.size()) + " offsets for " +
                           std::to_string(n) + " buffers");
  for (std::size_t i = 0; i < n; ++i) TM_RETURN_IF_ERROR(CheckPlacement(problem, plan, alignment, i));
  if (enforce_capacity && problem.capacity && plan.total > *problem.capacity)
    return ResourceExhausted("plan needs " + std::to_string(plan.total) +
                             " bytes, more than the capacity of " +
                             std::to_string(*problem.capacity));
  return CheckNoOverlap(problem, plan);
}

Result<OffsetsPlan> OffsetsPlanFrom(const Problem& problem, std::vector<std::uint64_t> offsets,
                                    std::uint64_t alignment) {
  OffsetsPlan plan;
  plan.offsets = std::move(offsets);
  // Saturating: an offset + size past 2^64 is the validator's to name.
  for (std::size_t i = 0; i < plan.offsets.size() && i < problem.buffers.size(); ++i)
    if (problem.buffers[i].size > 0)
      plan.total = std::max(plan.total, internal::SaturatingAdd(plan.offsets[i], problem.buffers[i].size));
  TM_RETURN_IF_ERROR(ValidateOffsetsPlan(problem, plan, alignment, /*enforce_capacity=*/false));
  return plan;
}

}  // namespace tensormem
