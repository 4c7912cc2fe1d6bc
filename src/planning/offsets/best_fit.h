// SPDX-License-Identifier: Apache-2.0
// Best-fit placement, the core of every greedy offset strategy.
//
// Buffers are placed one at a time in a given order. A buffer may not share
// a byte with any already placed buffer whose occupancy shares a task with
// its own; those buffers forbid an interval of offsets each. Among the free
// stretches of offsets between forbidden intervals, the buffer takes the
// tightest one it fits in (aligned start), the lowest on a tie; when none is
// bounded, it goes right above the highest conflicting buffer. Buffers with
// fixed offsets are placed first; zero-byte buffers take offset 0 (or their
// fixed one) and occupy nothing.
//
// For plain buffers this is exactly the loop of TensorFlow Lite's
// SimpleMemoryArena::Allocate and of the GPU delegate's greedy_by_size
// offsets (including how the arena compares an aligned gap against the best
// unaligned one); PlaceBestFitReference is that loop transcribed literally.
// PlaceBestFit finds the conflicting buffers with an IntervalIndex instead
// of scanning all placed buffers, and gives identical offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/deadline.h"
#include "tensormem/problem.h"
#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem::planning {

// `order` is a permutation of all buffer indices (fixed-offset buffers in it
// are skipped). Fails on 64-bit overflow of the arena, and with
// kDeadlineExceeded once `deadline` (ticked per placement; null: none)
// expires.
Result<OffsetsPlan> PlaceBestFit(const Problem& problem, std::span<const std::size_t> order,
                                 std::uint64_t alignment, internal::Deadline* deadline = nullptr);

// The same offsets as PlaceBestFit for an `order` by first task
// (non-decreasing; InvalidArgument otherwise) of a problem without gaps or
// fixed offsets (InvalidArgument otherwise). In that order the placed
// buffers a buffer conflicts with are exactly those still live at its first
// task, so they are kept as a live set sorted by offset (the expired ones
// leave before each placement) and their forbidden intervals come out
// sorted: no interval index and no sort, an online best-fit allocator.
Result<OffsetsPlan> PlaceBestFitInTimeOrder(const Problem& problem, std::span<const std::size_t> order,
                                            std::uint64_t alignment, internal::Deadline* deadline = nullptr);

// Literal quadratic transcription for plain records (no gaps, fixed offsets
// or per-buffer alignment).
Result<OffsetsPlan> PlaceBestFitReference(std::span<const UsageRecord> records,
                                          std::span<const std::size_t> order,
                                          std::uint64_t alignment, internal::Deadline* deadline = nullptr);

// The error of a placement loop stopped by its deadline.
Status PlacementDeadline(const internal::Deadline& deadline, std::size_t placed, std::size_t total);

}  // namespace tensormem::planning
