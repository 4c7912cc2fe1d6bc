// SPDX-License-Identifier: Apache-2.0
// Presolve: from a Problem to the independent search instances.
//
// 1. Zero-byte buffers take offset 0 (or their fixed one) and leave.
//    Buffers with fixed offsets become obstacles: rectangles of
//    (time, bytes) that every instance overlapping them in time must avoid.
// 2. The other buffers split into time partitions: maximal groups whose
//    lifetimes chain together. No buffer crosses from one partition to the
//    next, so each is solved alone and the arena is the highest of them.
// 3. Full-span reduction: in a partition without obstacles, a plain buffer
//    live during the whole partition can go to its bottom (moving it there
//    and everything that was below it up by its size keeps any plan valid
//    when its size is a multiple of every alignment in the partition). What
//    remains is partitioned again, on top of a base height.
// 4. Each partition's time axis is cut into sections (maximal spans where
//    no occupancy starts or ends); every buffer becomes an Item with its
//    occupancy as pieces over section ranges.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/checked_math.h"
#include "core/deadline.h"
#include "core/sort_until.h"
#include "tensormem/problem.h"
#include "tensormem/solver.h"
#include "tensormem/status.h"

namespace tensormem::solver {

// Sections [begin, end) of an item's occupancy; bytes [offset + lo, offset + hi).
struct Piece {
  std::uint32_t begin = 0, end = 0;
  std::uint64_t lo = 0, hi = 0;
};

// A fixed rectangle: sections [begin, end), absolute bytes [lo, hi).
struct Obstacle {
  std::uint32_t begin = 0, end = 0;
  std::uint64_t lo = 0, hi = 0;
};

// An obstacle as one item sees it: bytes [lo, hi) during sections where the
// item occupies up to `reach` bytes above its offset (pieces with lo = 0).
struct ObstacleRef {
  std::uint64_t lo = 0, hi = 0;
  std::uint64_t reach = 0;
  std::uint32_t obstacle = 0;
};

struct Item {
  std::size_t buffer = 0;           // index in the Problem
  std::uint64_t height = 0;         // max piece hi
  std::uint64_t alignment = 1;      // lcm of the buffer's and the global one
  std::uint32_t first_section = 0;  // span [first_section, end_section), gaps included
  std::uint32_t end_section = 0;
  std::uint32_t piece_begin = 0, piece_end = 0;        // into Instance::pieces
  std::uint32_t obstacle_begin = 0, obstacle_end = 0;  // into Instance::obstacle_refs
  std::int32_t twin = -1;  // an identical item before this one (placed first), or -1
  std::uint32_t rank = 0;  // static tie order: lower is tried first
  bool plain = true;       // one piece [first, end) with lo = 0, hi = height
  TaskIndex lifetime = 0;
  std::uint64_t total = 0;  // highest live bytes during its lifetime
  // height x lifetime (saturating), for orders: computed, not stored (8
  // bytes an item, megabytes on 10^5-10^6 buffers).
  std::uint64_t Area() const {
    return internal::SaturatingMul(height, static_cast<std::uint64_t>(lifetime));
  }
};

struct Instance {
  std::uint32_t num_sections = 0;
  std::vector<TaskIndex> section_start;  // first task of each section
  std::uint64_t base = 0;                // floors start here
  std::vector<Item> items;
  std::vector<Piece> pieces;
  std::vector<Obstacle> obstacles;
  std::vector<ObstacleRef> obstacle_refs;  // per item, sorted by lo
  std::vector<std::size_t> obstacle_buffers;  // the fixed buffers behind the obstacles
  // Per section, the obstacles' byte ranges merged and sorted (the hole
  // inference): section s owns [section_obstacle_begin[s],
  // section_obstacle_begin[s + 1]) of section_obstacle_lo / _hi. Empty
  // without obstacles, or when the lists would pass 2^22 entries.
  std::vector<std::uint32_t> section_obstacle_begin;
  std::vector<std::uint64_t> section_obstacle_lo, section_obstacle_hi;
  // Some item piece starts above its offset (a window with lo > 0): only
  // the general engine handles that.
  bool needs_general = false;
  // All effective alignments are 1 (the general engine is complete then).
  bool unit_alignment = true;
  // Proven lower bound on this partition's height (peak live bytes with
  // obstacles and base, the lowest top any single item can reach).
  std::uint64_t lower_bound = 0;
  // Every canonical plan's offsets and tops are multiples of this (see
  // Granule): so is the partition's minimum height, and a probe at a
  // capacity is the same as one at the capacity rounded down to it. 1 with
  // windows above the offset (the general engine).
  std::uint64_t granule = 1;
};

// The granule of a plain instance: the largest g that divides the base,
// every piece's bounds and every obstacle's bounds, and such that for every
// alignment a, g divides a or a divides g. Then an offset built as canonical
// placements build them (the base, or a top = offset + piece bound, or an
// obstacle's top, aligned up) is a multiple of g: aligning up a multiple of
// g by a divisor of g changes nothing, and by a multiple of g gives a
// multiple of g. Every plan can be made canonical without raising its
// height (skyline_search.h), so the minimum height is a multiple of g.
std::uint64_t Granule(const Instance& instance);

// v rounded up / down to a multiple of g (saturating).
inline std::uint64_t RoundUpTo(std::uint64_t v, std::uint64_t g) {
  const std::uint64_t rem = v % g;
  if (rem == 0) return v;
  return v > UINT64_MAX - (g - rem) ? UINT64_MAX : v + (g - rem);
}
inline std::uint64_t RoundDownTo(std::uint64_t v, std::uint64_t g) { return v - v % g; }

struct Placement {
  std::size_t buffer = 0;
  std::uint64_t offset = 0;
};

struct Presolved {
  std::vector<Instance> instances;
  // Buffers placed by the presolve itself: zero bytes, fixed offsets, and
  // the full-span reduction.
  std::vector<Placement> placed;
  std::vector<std::uint64_t> effective_alignment;  // per buffer
  // Highest top among the presolve's placements (fixed and stripped).
  std::uint64_t placed_height = 0;
  // PeakLiveBytes(problem): the whole problem's peak live bytes.
  std::uint64_t peak = 0;
  // Set when the presolve alone proves no plan exists at any height (two
  // fixed buffers overlap): the reason and the culprits.
  std::string conflict;
  std::vector<std::size_t> conflict_buffers;
};

struct PresolveOptions {
  std::uint64_t alignment = 1;
  bool decompose = true;
  bool full_span_reduction = true;
  CanonicalOrder order = CanonicalOrder::kLongestFirst;
  // Read in every loop and between the stages (nullptr: none). When it
  // passes, Presolve fails with kDeadlineExceeded.
  internal::Deadline* deadline = nullptr;
  // The caller's index of each buffer, for errors and reasons (empty: the
  // problem's own; canonical_order.h).
  std::span<const std::size_t> caller_index;
};

// Sets Item::rank of every item by the static order (ties by index), under
// a deadline (nullptr: none): false (ranks unchanged) when it passes.
bool AssignRanks(Instance& instance, CanonicalOrder order, internal::Deadline* deadline);
// The ranks AssignRanks would set, per item, without touching the instance.
bool RankItems(const Instance& instance, CanonicalOrder order, internal::Deadline* deadline,
               std::vector<std::uint32_t>* ranks);

// Fills the instance's per-section obstacle ranges (Instance::
// section_obstacle_*) from its obstacles and sections.
void BuildSectionObstacles(Instance& inst);

// The problem must have passed CheckProblem. Fails only on arithmetic
// overflow of alignments (bad input).
Result<Presolved> Presolve(const Problem& problem, const PresolveOptions& options);

// The lowest aligned offset >= from at which `item` avoids its obstacles
// (pieces with lo = 0). Saturates at UINT64_MAX.
std::uint64_t LowestFreeOffset(const Instance& inst, const Item& item, std::uint64_t from);

// align_up(v, a), saturating.
inline std::uint64_t AlignUpSat(std::uint64_t v, std::uint64_t a) {
  const std::uint64_t rem = v % a;
  if (rem == 0) return v;
  const std::uint64_t add = a - rem;
  return v > UINT64_MAX - add ? UINT64_MAX : v + add;
}

}  // namespace tensormem::solver
