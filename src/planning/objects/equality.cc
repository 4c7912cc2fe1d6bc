// SPDX-License-Identifier: Apache-2.0
// equality (objects): a tensor reuses a free object only if the object has
// exactly its size (for 2-D/3-D/4-D extents: exactly its shape). Tensors are
// walked in task order; before tensor i every object whose last user ended
// before i's first task is released, and i takes a free object of its size,
// else a new one. Which free object: for 1-D sizes and 4-D BHWC shapes the
// most recently released one (TFLite GPU's EqualityAssignmentWithHash); for
// 2-D/3-D texture extents the lowest id (TFLite's EqualityAssignment, a scan
// of the objects in id order, which the delegate uses for uint2/uint3).
//
// Free objects are kept per size in a map (a stack of the released ones, or
// an ordered set of ids), so the transcription is O(n log n) and serves both
// the default and the reference path.
#include <array>
#include <limits>
#include <map>
#include <set>

#include "planning/objects/objects_strategies.h"
#include "planning/objects/release_queue.h"
#include "planning/objects/work_budget.h"

namespace tensormem::planning {
namespace {

std::uint64_t SizeKey(std::uint64_t size) { return size; }
std::array<std::uint64_t, 4> SizeKey(const Extent& size) { return size.dims; }

// Free objects of one size: a stack (back = most recently released) or, for
// lowest-id reuse, an ordered set.
// O(n log n), so no work limit, but it reads the call's time limit (seconds
// at 10^6 tensors).
template <typename Plan, typename Record>
Result<Plan> Equality(std::span<const Record> records, bool lowest_id, const PlanParams& params) {
  WorkBudget budget(std::numeric_limits<std::uint64_t>::max(), &params);
  Plan plan;
  plan.object_of.assign(records.size(), 0);
  using Key = decltype(SizeKey(records[0].size));
  std::map<Key, std::vector<std::size_t>> released_stack;
  std::map<Key, std::set<std::size_t>> free_ids;
  ReleaseQueue in_use;
  for (std::size_t i = 0; i < records.size(); ++i) {
    budget.Spend(1);
    if (budget.Exhausted()) return budget.Error("equality", records.size());
    const Record& r = records[i];
    in_use.ReleaseBefore(r.first_task, [&](std::size_t object) {
      const Key key = SizeKey(plan.object_sizes[object]);
      if (lowest_id) {
        free_ids[key].insert(object);
      } else {
        released_stack[key].push_back(object);
      }
    });
    std::size_t object = plan.object_sizes.size();
    if (lowest_id) {
      auto it = free_ids.find(SizeKey(r.size));
      if (it != free_ids.end() && !it->second.empty()) {
        object = *it->second.begin();
        it->second.erase(it->second.begin());
      }
    } else {
      auto it = released_stack.find(SizeKey(r.size));
      if (it != released_stack.end() && !it->second.empty()) {
        object = it->second.back();
        it->second.pop_back();
      }
    }
    if (object == plan.object_sizes.size()) plan.object_sizes.push_back(r.size);
    plan.object_of[i] = object;
    in_use.Push(r.last_task, object);
  }
  return plan;
}

}  // namespace

Result<ObjectsPlan> EqualityObjects(std::span<const UsageRecord> records, const PlanParams& params) {
  return Equality<ObjectsPlan>(records, /*lowest_id=*/false, params);
}

Result<ExtentObjectsPlan> EqualityObjects(std::span<const ExtentRecord> records,
                                          const PlanParams& params) {
  // The dispatcher guarantees one rank for all records.
  const bool texture = !records.empty() && (records[0].size.rank == 2 || records[0].size.rank == 3);
  return Equality<ExtentObjectsPlan>(records, /*lowest_id=*/texture, params);
}

}  // namespace tensormem::planning
