// SPDX-License-Identifier: Apache-2.0
// greedy_by_size (offsets): buffers by size, largest first (stable by index),
// each at the tightest gap among the already placed buffers it conflicts
// with (best_fit.h). Large tensors claim space first; small ones fill holes.
// Reaches the lower bound on many real networks.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "planning/offsets/best_fit.h"
#include "planning/offsets/offsets_strategies.h"

namespace tensormem::planning {

Result<OffsetsPlan> PlaceInOrder(const Problem& problem, std::span<const std::size_t> order,
                                 const PlanParams& params, internal::Deadline* deadline) {
  if (!params.reference) return PlaceBestFit(problem, order, params.alignment, deadline);
  if (HasExtendedFeatures(problem))
    return InvalidArgument(
        "the reference (faithful) planners take plain records only: no gaps, fixed offsets or "
        "per-buffer alignment");
  const std::vector<UsageRecord> records = ToRecords(problem);
  return PlaceBestFitReference(records, order, params.alignment, deadline);
}

Result<OffsetsPlan> GreedyBySizeOffsets(const Problem& problem, const PlanParams& params) {
  internal::Deadline deadline(params.time_limit_seconds, params.should_stop);
  // Largest first (the complement orders sizes downwards), ties by index.
  const std::vector<std::size_t> order =
      OrderByKey(problem, [](const Buffer& b) { return ~b.size; });
  return PlaceInOrder(problem, order, params, &deadline);
}

}  // namespace tensormem::planning
