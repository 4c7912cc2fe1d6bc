// SPDX-License-Identifier: Apache-2.0
// A deliberate wrong-way call, for the layer check's own test: code that
// calls the offsets dispatcher (PlanOffsets), which sits above the solver.
// Linked as part of the planning layer it must fail to link; as part of the
// strategies layer, where the dispatcher lives, the same code must link.
#include "tensormem/planning.h"

namespace tensormem::layers_test {

Result<OffsetsPlan> CallsTheOffsetsDispatcher(const Problem& problem) {
  return PlanOffsets(problem, OffsetsStrategy::kBest);
}

}  // namespace tensormem::layers_test
