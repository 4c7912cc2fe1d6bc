// SPDX-License-Identifier: Apache-2.0
// Lower bounds, the one routine every report uses.
//
// Offsets: no arena can be smaller than the peak live bytes (max over tasks of
// the sum of the sizes live at that task; during a gap a buffer counts only
// its window; with alignment, the padding that alignment forces). Shared objects: no set of objects can cost less than the sum of
// the positional maximums (for each rank k, the largest k-th-largest size live
// at any one task), since the k largest tensors live at a task need k
// distinct objects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tensormem/problem.h"
#include "tensormem/types.h"

namespace tensormem {

// Saturates at UINT64_MAX. O(n log n).
std::uint64_t PeakLiveBytes(std::span<const UsageRecord> records);
// With `alignment` (and the buffers' own alignments) the bound counts the
// padding alignment forces between buffers live together: a tighter bound
// that every aligned plan still respects.
std::uint64_t PeakLiveBytes(const Problem& problem, std::uint64_t alignment = 1);

// The first task at which the live bytes reach their peak (0 when empty).
TaskIndex PeakTask(std::span<const UsageRecord> records);

// positional_maximums[k] = max over tasks of the k-th largest live size
// (k from 0), non-increasing. O(n log n).
std::vector<std::uint64_t> PositionalMaximums(std::span<const UsageRecord> records);

// The most tensors live at one task (zero-sized ones too):
// PositionalMaximums(records).size() without the sizes. O(n log n).
std::size_t MaxLiveTensors(std::span<const UsageRecord> records);

// Sum of the positional maximums (saturating).
std::uint64_t ObjectsLowerBound(std::span<const UsageRecord> records);

}  // namespace tensormem
