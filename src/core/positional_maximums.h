// SPDX-License-Identifier: Apache-2.0
// PositionalMaximums (tensormem/lower_bounds.h) under a planning call's
// deadline: objects best and greedy_by_size compute it inside their time
// limit, and at 10^6 records it takes about a second.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/deadline.h"
#include "tensormem/types.h"

namespace tensormem::internal {

// *maxima = PositionalMaximums(records) and true; false (and *maxima
// unspecified) once the deadline (nullptr: none) passes.
bool PositionalMaximumsUntil(std::span<const UsageRecord> records, Deadline* deadline,
                             std::vector<std::uint64_t>* maxima);

// The same with the 64-bit counts PositionalMaximumsUntil uses from 2^31
// records on, whatever the count: for tests.
std::vector<std::uint64_t> PositionalMaximumsWithWideCounts(std::span<const UsageRecord> records);

// Their sum, saturating: ObjectsLowerBound from maximums already computed.
std::uint64_t SumOfMaximums(std::span<const std::uint64_t> maxima);

}  // namespace tensormem::internal
