// SPDX-License-Identifier: Apache-2.0
// The shared-objects strategies behind PlanObjects (one file each). Records
// arrive sorted by first task (the dispatcher sorts and maps back) and
// well formed; the dispatcher fills the metadata and validates the result.
#pragma once

#include <cstdint>
#include <span>

#include "tensormem/planning.h"

namespace tensormem::planning {

Result<ObjectsPlan> NaiveObjects(std::span<const UsageRecord> records, const PlanParams& params);
Result<ExtentObjectsPlan> NaiveObjects(std::span<const ExtentRecord> records,
                                       const PlanParams& params);
Result<ObjectsPlan> EqualityObjects(std::span<const UsageRecord> records, const PlanParams& params);
Result<ExtentObjectsPlan> EqualityObjects(std::span<const ExtentRecord> records,
                                          const PlanParams& params);
Result<ObjectsPlan> GreedyInOrderObjects(std::span<const UsageRecord> records,
                                         const PlanParams& params);
Result<ExtentObjectsPlan> GreedyInOrderObjects(std::span<const ExtentRecord> records,
                                               const PlanParams& params);
Result<ObjectsPlan> GreedyByBreadthObjects(std::span<const UsageRecord> records,
                                           const PlanParams& params);
Result<ObjectsPlan> GreedyBySizeObjects(std::span<const UsageRecord> records,
                                        const PlanParams& params);
// With the records' positional maximums already known (objects best computes
// them for its bound): the same plan without computing them again.
Result<ObjectsPlan> GreedyBySizeObjects(std::span<const UsageRecord> records,
                                        const PlanParams& params,
                                        std::span<const std::uint64_t> maxima);
Result<ObjectsPlan> MinCostFlowObjects(std::span<const UsageRecord> records,
                                       const PlanParams& params);
Result<ObjectsPlan> TightestFitObjects(std::span<const UsageRecord> records,
                                       const PlanParams& params);
Result<ObjectsPlan> GreedyBestObjects(std::span<const UsageRecord> records,
                                      const PlanParams& params);
Result<ObjectsPlan> BestObjects(std::span<const UsageRecord> records, const PlanParams& params);

}  // namespace tensormem::planning
