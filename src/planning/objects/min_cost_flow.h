// SPDX-License-Identifier: Apache-2.0
// Internal knobs of the default min_cost_flow path, exposed for tests and
// benchmarks (see min_cost_flow.cc for what they mean).
#pragma once

#include <cstddef>
#include <span>

#include "tensormem/planning.h"
#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem::planning {

struct MinCostFlowWindow {
  // Reuse candidates of each tensor: the `recent` most recently released
  // tensors, plus up to `unused` more of the most recently released ones
  // whose object has not been reused yet.
  std::size_t recent = 32;
  std::size_t unused = 32;
};

// The default path with explicit windows. With windows wider than the input
// it solves TFLite's whole flow graph to the same optimal cost. With params,
// their time limit applies.
Result<ObjectsPlan> MinCostFlowWindowed(std::span<const UsageRecord> records,
                                        MinCostFlowWindow window,
                                        const PlanParams* params = nullptr);

// The literal transcription (refuses inputs above its record limit).
Result<ObjectsPlan> MinCostFlowReference(std::span<const UsageRecord> records);

}  // namespace tensormem::planning
