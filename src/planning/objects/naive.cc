// SPDX-License-Identifier: Apache-2.0
// naive (objects): one object per tensor, as large as the tensor. No reuse:
// every intermediate survives, which is what a debugger wants.
#include "planning/objects/objects_strategies.h"

namespace tensormem::planning {
namespace {

template <typename Plan, typename Record>
Plan Naive(std::span<const Record> records) {
  Plan plan;
  plan.object_of.reserve(records.size());
  plan.object_sizes.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    plan.object_of.push_back(i);
    plan.object_sizes.push_back(records[i].size);
  }
  return plan;
}

}  // namespace

Result<ObjectsPlan> NaiveObjects(std::span<const UsageRecord> records, const PlanParams&) {
  return Naive<ObjectsPlan>(records);
}

Result<ExtentObjectsPlan> NaiveObjects(std::span<const ExtentRecord> records, const PlanParams&) {
  return Naive<ExtentObjectsPlan>(records);
}

}  // namespace tensormem::planning
