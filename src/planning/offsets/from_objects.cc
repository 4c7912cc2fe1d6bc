// SPDX-License-Identifier: Apache-2.0
// from_objects: a shared-objects plan (PlanParams::from_objects) turned into
// offsets by laying the objects back to back in id order; every tensor takes
// its object's offset. Useful when a runtime wants one arena but its
// planning is object-based, and as a candidate of `best`.
#include <algorithm>

#include "core/checked_math.h"
#include "planning/offsets/offsets_strategies.h"

namespace tensormem {
namespace {

Result<OffsetsPlan> LayOut(const ObjectsPlan& plan, const std::vector<std::uint64_t>& alignments) {
  std::vector<std::uint64_t> object_offset(plan.object_sizes.size(), 0);
  std::vector<bool> used(plan.object_sizes.size(), false);
  for (std::size_t id : plan.object_of) {
    if (id >= plan.object_sizes.size())
      return InvalidArgument("object id " + std::to_string(id) + " out of range: the plan has " +
                             std::to_string(plan.object_sizes.size()) + " objects");
    used[id] = true;
  }
  OffsetsPlan out;
  std::uint64_t next = 0;
  for (std::size_t k = 0; k < plan.object_sizes.size(); ++k) {
    std::uint64_t start, end;
    if (!internal::CheckedAlignUp(next, alignments[k], &start) ||
        !internal::CheckedAdd(start, plan.object_sizes[k], &end))
      return OutOfRange("laying out objects: the arena overflows 64 bits at object " +
                        std::to_string(k));
    object_offset[k] = start;
    next = end;
    if (used[k] && plan.object_sizes[k] > 0) out.total = std::max(out.total, end);
  }
  out.offsets.reserve(plan.object_of.size());
  for (std::size_t id : plan.object_of) out.offsets.push_back(object_offset[id]);
  return out;
}

}  // namespace

Result<OffsetsPlan> ObjectsToOffsets(const ObjectsPlan& plan, std::uint64_t alignment) {
  TM_RETURN_IF_ERROR(ValidateAlignment(alignment, "ObjectsToOffsets"));
  return LayOut(plan, std::vector<std::uint64_t>(plan.object_sizes.size(), alignment));
}

namespace planning {

Result<OffsetsPlan> FromObjectsOffsets(const Problem& problem, const PlanParams& params) {
  for (const Buffer& b : problem.buffers)
    if (b.fixed_offset)
      return InvalidArgument("from_objects cannot honour the fixed offset of buffer '" + b.id +
                             "'; use greedy_by_size, best or exact");
  const std::vector<UsageRecord> records = ToRecords(problem);
  PlanParams objects_params = params;
  objects_params.validate = false;  // validated as offsets below
  TM_ASSIGN_OR_RETURN(ObjectsPlan objects, PlanObjects(records, params.from_objects, objects_params));
  std::vector<std::uint64_t> alignments(objects.object_sizes.size(), params.alignment);
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    std::uint64_t& a = alignments[objects.object_of[i]];
    if (!internal::CheckedLcm(a, problem.buffers[i].alignment, &a))
      return OutOfRange("alignment of buffer '" + problem.buffers[i].id + "' overflows");
  }
  return LayOut(objects, alignments);
}

}  // namespace planning
}  // namespace tensormem
