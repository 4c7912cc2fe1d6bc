// SPDX-License-Identifier: Apache-2.0
// Core vocabulary: usage records, tensor extents, and the two kinds of plan.
//
// One interval convention inside the library: a lifetime is the INCLUSIVE task
// range [first_task, last_task]. Two tensors conflict unless one's last_task
// is strictly less than the other's first_task. File formats with half-open
// spans convert at the edge (see io.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensormem/status.h"

namespace tensormem {

using TaskIndex = std::int64_t;

// Task indices must lie in [0, kMaxTaskIndex]; the headroom keeps "last + 1"
// and differences of tasks free of overflow everywhere.
inline constexpr TaskIndex kMaxTaskIndex = TaskIndex{1} << 62;

// "Alignment" means one thing across tensormem: the byte boundary an offset
// or an address must be a multiple of, a power of two from 1 (none) to a
// bound (kMaxAlignment for plans; allocators pass kMaxAllocationAlignment).
// A buffer's own alignment and a plan's combine by the larger. Never 0:
// where a default exists it is the field's initial value (the graph's
// per-tensor 0, "the plan's", is the one documented exception).
inline constexpr std::uint64_t kMaxAlignment = std::uint64_t{1} << 62;

// Ok, or InvalidArgument "<what>: alignment N is not a power of two between
// 1 and max" (what names the parameter or buffer at fault).
Status ValidateAlignment(std::uint64_t alignment, std::string_view what,
                         std::uint64_t max = kMaxAlignment);

// Inclusive lifetimes overlap (the tensors conflict).
constexpr bool LifetimesOverlap(TaskIndex first_a, TaskIndex last_a, TaskIndex first_b,
                                TaskIndex last_b) {
  return !(last_a < first_b || last_b < first_a);
}

// A 1-D to 4-D tensor extent: a GPU texture (2-D, 3-D) or a BHWC shape.
// Unused trailing dimensions are 0 and ignored.
struct Extent {
  std::array<std::uint64_t, 4> dims{};
  int rank = 0;

  Extent() = default;
  Extent(std::initializer_list<std::uint64_t> d);

  std::uint64_t operator[](int i) const { return dims[static_cast<std::size_t>(i)]; }
  // Product of the dimensions, saturating at UINT64_MAX.
  std::uint64_t Elements() const;
  // True when this extent is at least as large as `other` in every dimension.
  bool Covers(const Extent& other) const;
  std::string ToString() const;  // "2x8"
  friend bool operator==(const Extent& a, const Extent& b) = default;
};

template <typename SizeT>
struct BasicUsageRecord {
  SizeT size{};
  TaskIndex first_task = 0;  // inclusive
  TaskIndex last_task = 0;   // inclusive

  bool ConflictsWith(const BasicUsageRecord& o) const {
    return LifetimesOverlap(first_task, last_task, o.first_task, o.last_task);
  }
  friend bool operator==(const BasicUsageRecord&, const BasicUsageRecord&) = default;
};

using UsageRecord = BasicUsageRecord<std::uint64_t>;
using ExtentRecord = BasicUsageRecord<Extent>;

// Shared-objects plan: tensor i lives on object object_of[i]; an object is as
// large as the largest tensor on it. cost = sum of object sizes.
template <typename SizeT>
struct BasicObjectsPlan {
  std::vector<std::size_t> object_of;  // per tensor
  std::vector<SizeT> object_sizes;     // per object
  // Filled by the dispatcher (PlanObjects): the strategy that made the plan,
  // the lower bound (sum of positional maximums) and the planning time.
  std::string strategy;
  std::uint64_t lower_bound = 0;
  double seconds = 0;
};

using ObjectsPlan = BasicObjectsPlan<std::uint64_t>;
using ExtentObjectsPlan = BasicObjectsPlan<Extent>;

// Sum of object sizes (saturating).
std::uint64_t TotalSize(const ObjectsPlan& plan);
// Sum of object element counts (saturating).
std::uint64_t TotalElements(const ExtentObjectsPlan& plan);

// Offsets plan: tensor i occupies [offsets[i], offsets[i] + size) of one arena.
struct OffsetsPlan {
  std::vector<std::uint64_t> offsets;  // per tensor
  std::uint64_t total = 0;             // arena size = max(offset + size)
  // Filled by the dispatcher (PlanOffsets) / solver.
  std::string strategy;
  std::uint64_t lower_bound = 0;  // peak live bytes, or better when proven
  double seconds = 0;
  // Offsets kBest: what its exact polish of the heuristic winner spent, when
  // it ran (nullopt: the winner was at the bound, or polishing was off or
  // out of reach; see PlanParams::polish_nodes).
  struct Polish {
    double seconds = 0;
    std::uint64_t nodes = 0;
  };
  std::optional<Polish> polish;
};

// total / lower_bound; 1.0 when both are 0; +inf when only the bound is 0.
double Ratio(std::uint64_t total, std::uint64_t lower_bound);

}  // namespace tensormem
