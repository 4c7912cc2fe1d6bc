// SPDX-License-Identifier: Apache-2.0
// The visiting order of the greedy_by_breadth strategies (TFLite GPU
// delegate): tasks in non-increasing breadth (sum of live sizes), ties by
// task index; within a task its live tensors by size, largest first, ties by
// tensor index; each tensor at its first appearance.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "core/deadline.h"
#include "tensormem/types.h"

namespace tensormem::planning {

// O(n log n): tasks with identical live sets (elementary intervals between
// consecutive lifetime boundaries) count once; a tensor's place is the best
// breadth rank over its intervals, a range minimum.
std::vector<std::size_t> BreadthOrder(std::span<const UsageRecord> records);
// The same under a deadline (nullptr: none): nullopt once it passes.
std::optional<std::vector<std::size_t>> BreadthOrder(std::span<const UsageRecord> records,
                                                     internal::Deadline* deadline);

// The same with the 64-bit indices BreadthOrder uses from 2^31 records on,
// whatever the count: for tests.
std::vector<std::size_t> BreadthOrderWithWideIndices(std::span<const UsageRecord> records);

// The literal per-task transcription (O(sum of lifetimes)), for tests.
std::vector<std::size_t> BreadthOrderReference(std::span<const UsageRecord> records);

}  // namespace tensormem::planning
