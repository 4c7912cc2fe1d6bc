// SPDX-License-Identifier: Apache-2.0
// The one validator, independent of every planner: it checks a plan against
// the problem using only the definitions (SPEC "Vocabulary"), so a planner
// bug cannot hide behind a shared helper. O(n log n) sweeps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tensormem/problem.h"
#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem {

// Shared objects: one object id per tensor, ids in range, every object at
// least as large as each tensor on it, no two conflicting tensors on one
// object. Objects no tensor uses are allowed (they still cost).
Status ValidateObjectsPlan(std::span<const UsageRecord> records, const ObjectsPlan& plan);
Status ValidateObjectsPlan(std::span<const ExtentRecord> records, const ExtentObjectsPlan& plan);

// Offsets: one offset per buffer; offset + size does not overflow and is
// <= plan.total; offsets are multiples of both the buffer's alignment and `alignment`; fixed
// offsets are kept; buffers whose occupancies (gaps and windows included)
// share a task never share a byte; total <= problem.capacity when one is set
// and `enforce_capacity` (heuristics report plans that may not fit).
// Zero-byte buffers occupy nothing.
Status ValidateOffsetsPlan(const Problem& problem, const OffsetsPlan& plan,
                           std::uint64_t alignment = 1, bool enforce_capacity = true);

// The plan that puts buffer i at offsets[i], its total the highest top,
// checked by ValidateOffsetsPlan (the capacity aside: a plan to start from
// may be above it): its error, naming the buffer, when it is not a plan.
Result<OffsetsPlan> OffsetsPlanFrom(const Problem& problem, std::vector<std::uint64_t> offsets,
                                    std::uint64_t alignment = 1);

}  // namespace tensormem
