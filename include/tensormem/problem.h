// SPDX-License-Identifier: Apache-2.0
// An offset-planning problem: the richer form of usage records that the file
// formats, the offset strategies, the exact solver and the validator share.
//
// A buffer has an id (kept unchanged from input to output), a size, an
// inclusive lifetime, an alignment for its offset, optionally a fixed offset,
// and optionally gaps: spans inside its lifetime where it occupies nothing,
// or only the bytes [offset + window_lo, offset + window_hi) (a "window").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem {

struct Gap {
  TaskIndex first_task = 0;  // inclusive
  TaskIndex last_task = 0;   // inclusive
  bool has_window = false;
  std::uint64_t window_lo = 0;  // bytes [lo, hi) of the buffer in use
  std::uint64_t window_hi = 0;
  friend bool operator==(const Gap&, const Gap&) = default;
};

struct Buffer {
  std::string id;
  std::uint64_t size = 0;
  TaskIndex first_task = 0;  // inclusive
  TaskIndex last_task = 0;   // inclusive
  std::uint64_t alignment = 1;  // of its offset: a power of two (ValidateAlignment)
  std::optional<std::uint64_t> fixed_offset;
  std::vector<Gap> gaps;  // sorted, disjoint, inside [first_task, last_task]
  friend bool operator==(const Buffer&, const Buffer&) = default;
};

struct Problem {
  std::vector<Buffer> buffers;
  // A capacity the plan must fit in (the solver's feasibility question and
  // the "fits in N bytes" check of the validator); unset = unbounded.
  std::optional<std::uint64_t> capacity;
};

// One rectangle of a buffer's occupancy in (task, relative byte) space:
// during tasks [first_task, last_task] the buffer uses bytes
// [offset + lo, offset + hi). A buffer without gaps is one segment
// {first, last, 0, size}; gaps split it. Zero-width segments are omitted.
struct Segment {
  TaskIndex first_task = 0;
  TaskIndex last_task = 0;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
};

// The occupancy of a buffer, in task order. Empty for zero-byte buffers.
std::vector<Segment> Occupancy(const Buffer& buffer);

// Checks the problem is well formed: first <= last, alignment a power of two, gaps
// sorted, disjoint and inside the lifetime, windows inside the buffer, fixed
// offsets aligned and not overflowing. Names the buffer at fault. (Ids are
// opaque to planning; the file readers reject duplicates.)
Status CheckProblem(const Problem& problem);
// InvalidArgument when two buffers with fixed offsets share a task and a
// byte (PlanOffsets checks this; the solver answers infeasible instead).
Status CheckFixedOffsets(const Problem& problem);

// The plain usage records (size, lifetime) of the buffers, gaps ignored.
std::vector<UsageRecord> ToRecords(const Problem& problem);

// A problem of plain buffers named "0", "1", ... from usage records.
Problem FromRecords(std::span<const UsageRecord> records);

// True when any buffer has a gap, a fixed offset, or an alignment above 1.
bool HasExtendedFeatures(const Problem& problem);

}  // namespace tensormem
