// SPDX-License-Identifier: Apache-2.0
// The general engine, for instances where some buffer's window starts above
// its offset (a gap during which only bytes [offset + lo, offset + hi) with
// lo > 0 are in use). There the skyline argument fails (a buffer placed
// later may slide under an earlier one's window), so this engine branches on
// (buffer, offset) pairs.
//
// Gravity: in a plan of least total offset no buffer can move down one
// alignment step, so each sits at 0 or at align_up(top of a rectangle it
// touches - its own lo there): the top of a placed buffer's or obstacle's
// rectangle during a section they share. The search places buffers one at a
// time at such candidate offsets (computed from the buffers placed so far),
// lowest offset first. With unit alignment every such plan is reached in an
// order where each buffer's support is placed before it, so the search is
// complete; with coarser alignment a cycle of mutual supports could in
// principle hide a plan, so exhausting the search then proves nothing.
// Small partitions then get a second, plainly complete search: every item,
// in index order, at every aligned offset below the capacity (at most
// kMaxAlignedLeaves combinations; identical items in offset order). Above
// that Run reports kLimit instead of kExhausted.
//
// Symmetry (partial-order reduction): after placing x, a pair (y, p) with y
// before x in index order is skipped when it was already available before x
// (p does not derive from x): the same set of placements is reached in the
// order y, x. Exponential; meant for the small windowed problems that need it.
#pragma once

#include <cstdint>
#include <vector>

#include "solver/instance.h"
#include "solver/search_control.h"

namespace tensormem::solver {

class GeneralSearch {
 public:
  explicit GeneralSearch(const Instance& instance) : inst_(instance) {}

  SearchOutcome Run(std::uint64_t capacity, std::uint64_t node_budget, SearchControl& control);

  // After kLimit: the search went through every candidate without the
  // budget running out, but with coarser alignment that proves nothing (see
  // above). A search at the same or a lower capacity would find nothing
  // either: its candidates are a subset.
  bool exhausted_unproven() const { return exhausted_unproven_; }

  const std::vector<std::uint64_t>& offsets() const { return offset_; }
  std::uint64_t height() const;
  std::uint64_t nodes() const { return nodes_; }

 private:
  struct Candidate {
    std::uint64_t offset;
    std::uint32_t rank;
    std::uint32_t item;
    bool without_last;  // derivable without the last placed item
  };
  static constexpr double kMaxAlignedLeaves = 1 << 22;
  bool Fits(std::uint32_t item, std::uint64_t offset) const;
  // The complete search over every aligned offset (see above): kFound,
  // kExhausted, or kLimit when too large or out of budget.
  SearchOutcome EveryAlignedOffset();
  bool PlaceAt(std::uint32_t item);
  void Candidates(std::int32_t last, std::vector<Candidate>* out) const;
  bool Dfs(std::int32_t last);

  const Instance& inst_;
  std::uint64_t capacity_ = 0;
  std::uint64_t budget_ = 0, start_nodes_ = 0, nodes_ = 0;
  SearchControl* control_ = nullptr;
  bool limit_hit_ = false;
  bool exhausted_unproven_ = false;
  std::vector<std::uint64_t> offset_;
  std::vector<std::uint8_t> placed_;
  std::vector<std::uint32_t> order_;  // placed items, in placement order
};

}  // namespace tensormem::solver
