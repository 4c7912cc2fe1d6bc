// SPDX-License-Identifier: Apache-2.0
// naive: every buffer gets its own bytes, laid out by prefix sums in index
// order (aligned); no reuse. Buffers with fixed offsets keep them and the
// others start above the highest of them.
#include <algorithm>

#include "core/checked_math.h"
#include "planning/offsets/offsets_strategies.h"

namespace tensormem::planning {

Result<OffsetsPlan> NaiveOffsets(const Problem& problem, const PlanParams& params) {
  OffsetsPlan plan;
  plan.offsets.assign(problem.buffers.size(), 0);
  std::uint64_t next = 0;
  for (const Buffer& b : problem.buffers)
    if (b.fixed_offset) next = std::max(next, *b.fixed_offset + b.size);  // checked by CheckProblem
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    std::uint64_t offset = b.fixed_offset.value_or(0), align, end;
    if (!b.fixed_offset && b.size > 0) {
      if (!internal::CheckedLcm(params.alignment, b.alignment, &align) ||
          !internal::CheckedAlignUp(next, align, &offset) ||
          !internal::CheckedAdd(offset, b.size, &next))
        return OutOfRange("naive layout: the sum of buffer sizes overflows 64 bits at buffer '" +
                          b.id + "'");
    }
    plan.offsets[i] = offset;
    if (b.size > 0 && internal::CheckedAdd(offset, b.size, &end)) plan.total = std::max(plan.total, end);
  }
  return plan;
}

}  // namespace tensormem::planning
