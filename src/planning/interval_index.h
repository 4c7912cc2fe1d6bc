// SPDX-License-Identifier: Apache-2.0
// IntervalIndex: the inclusive task intervals of a fixed set of tensors, any
// subset of them "present", and an output-sensitive query for the present
// intervals that overlap [first, last]. A max-segment tree over the tensors
// sorted by first task, each leaf holding its last task while present, lets a
// query skip every subtree whose present intervals all end before `first`:
// O((k + 1) log n) for k reported. This is what turns the peers' quadratic
// "scan every placed tensor" loops into near-linear ones on real networks.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/deadline.h"
#include "tensormem/types.h"

namespace tensormem::planning {

std::vector<TaskIndex> DistinctSorted(std::vector<TaskIndex> values);
std::size_t RankOf(const std::vector<TaskIndex>& sorted, TaskIndex t);  // t must be present
std::size_t RankOfLastStartAtOrBefore(const std::vector<TaskIndex>& sorted, TaskIndex t);

class IntervalIndex {
 public:
  // firsts/lasts: per tensor, inclusive.
  IntervalIndex(const std::vector<TaskIndex>& firsts, const std::vector<TaskIndex>& lasts);

  void Insert(std::size_t tensor) { Set(tensor, lasts_[tensor]); }
  void Erase(std::size_t tensor) { Set(tensor, kAbsent); }
  bool Contains(std::size_t tensor) const {
    return tree_[leaves_ + rank_[tensor]] != kAbsent;
  }

  // Calls visit(tensor) for every present tensor whose interval overlaps
  // [first, last], in order of first task (ties by tensor index).
  template <typename Visit>
  void ForEachOverlapping(TaskIndex first, TaskIndex last, Visit&& visit) const {
    // Present tensors with first_task <= last occupy sorted ranks [0, end).
    std::size_t end = UpperBoundFirst(last);
    if (end == 0) return;
    Walk(1, 0, leaves_ - 1, end - 1, first, visit);
  }

 private:
  static constexpr TaskIndex kAbsent = std::numeric_limits<TaskIndex>::min();

  void Set(std::size_t tensor, TaskIndex value);
  std::size_t UpperBoundFirst(TaskIndex t) const;

  template <typename Visit>
  void Walk(std::size_t node, std::size_t l, std::size_t r, std::size_t hi, TaskIndex first,
            Visit& visit) const {
    if (l > hi || tree_[node] < first) return;
    if (node >= leaves_) {
      visit(sorted_[node - leaves_]);
      return;
    }
    const std::size_t m = l + (r - l) / 2;
    Walk(2 * node, l, m, hi, first, visit);
    Walk(2 * node + 1, m + 1, r, hi, first, visit);
  }

  std::vector<TaskIndex> lasts_;
  std::vector<std::size_t> sorted_;      // tensors by (first, index)
  std::vector<TaskIndex> sorted_first_;  // their first tasks
  std::vector<std::size_t> rank_;        // tensor -> position in sorted_
  std::size_t leaves_ = 1;               // power of two >= n
  std::vector<TaskIndex> tree_;          // 1-based heap of maxima
};

// StabIndex: the set of placed tensors for best-fit placement, where every
// tensor is inserted exactly once (so every list's final length is known up
// front). Task coordinates are compressed to the distinct first tasks; a
// tensor sits in the O(log n) canonical nodes of a segment tree over them and
// in the bucket of its own first task. The tensors overlapping tensor j are
// those containing j's first task (the lists on one leaf-to-root path) plus
// those starting later within j's lifetime (the buckets in between):
// O(log n + k) for k reported, plus one step per distinct start inside j's
// lifetime. Lists live in one flat array (CSR) and carry a caller-chosen
// payload, so a query touches little memory: at 10^5 tensors the cost is
// cache misses, not instructions. Building it costs O(n log n) (seconds at
// 10^6 tensors), so it reads the caller's deadline: when that passes, the
// index is left incomplete() and must not be used.
template <typename Payload>
class StabIndex {
 public:
  StabIndex(const std::vector<TaskIndex>& firsts, const std::vector<TaskIndex>& lasts,
            internal::Deadline* deadline = nullptr)
      : ranks_(firsts.size()) {
    if (deadline && deadline->Expired()) return;
    const std::vector<TaskIndex> starts = DistinctSorted(firsts);
    const std::size_t num_starts = std::max<std::size_t>(starts.size(), 1);
    // A bottom-up tree of exactly num_starts leaves (no power of two): the
    // canonical nodes of a range and the path from a leaf to the root still
    // meet once per range holding the leaf, for any number of leaves.
    leaves_ = num_starts;
    // Slots 0 .. 2*leaves-1: tree nodes; then one bucket per start rank.
    // Counted in the slots' own `fill` (no separate count array: at 3 x
    // 10^5 tensors every array here is megabytes).
    slots_.assign(2 * leaves_ + num_starts + 1, Slot{0, 0});
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < firsts.size(); ++i) {
      if (deadline && !deadline->Tick()) return;
      ranks_[i] = {static_cast<std::uint32_t>(RankOf(starts, firsts[i])),
                   static_cast<std::uint32_t>(RankOfLastStartAtOrBefore(starts, lasts[i]))};
      ForEachSlot(ranks_[i], [&](std::size_t slot) {
        ++slots_[slot].fill;
        ++total;
      });
    }
    // 32-bit positions: each tensor sits in at most 2 log2(leaves) + 1
    // slots, so this needs tens of millions of tensors.
    if (total > UINT32_MAX) {
      too_large_ = true;
      return;
    }
    std::uint32_t begin = 0;
    for (Slot& slot : slots_) {
      const std::uint32_t count = slot.fill;
      slot = {begin, begin};
      begin += count;
    }
    if (deadline && deadline->Expired()) return;
    entries_.resize(total);
    complete_ = true;
  }

  // False when the deadline passed while building, or when the index would
  // hold 2^32 entries or more (too_large()): nothing else may be called.
  bool complete() const { return complete_; }
  bool too_large() const { return too_large_; }

  struct Ranks {
    std::uint32_t lo, hi;  // rank of the first task; rank of the last start inside the lifetime
  };
  const Ranks& RanksOf(std::size_t tensor) const { return ranks_[tensor]; }

  void Insert(std::size_t tensor, const Payload& payload) {
    ForEachSlot(ranks_[tensor], [&](std::size_t slot) { entries_[slots_[slot].fill++] = payload; });
  }

  // Calls visit(payload) once for every inserted tensor whose lifetime
  // overlaps a lifetime with ranks r (that of any tensor of the set).
  template <typename Visit>
  void ForEachOverlapping(Ranks r, Visit&& visit) const {
    const Payload* entries = entries_.data();
    const Slot* slots = slots_.data();
    for (std::size_t node = leaves_ + r.lo; node >= 1; node /= 2) {
      const Payload* end = entries + slots[node].fill;
      for (const Payload* e = entries + slots[node].begin; e != end; ++e) visit(*e);
    }
    // Buckets of consecutive start ranks are adjacent in entries_.
    for (std::size_t k = r.lo + 1; k <= r.hi; ++k) {
      const Slot& slot = slots[2 * leaves_ + k];
      for (const Payload* e = entries + slot.begin; e != entries + slot.fill; ++e) visit(*e);
    }

  }

 private:
  template <typename Fn>
  void ForEachSlot(Ranks r, Fn&& fn) const {
    fn(2 * leaves_ + r.lo);  // the bucket of its first task
    std::size_t l = r.lo + leaves_, h = r.hi + leaves_ + 1;  // canonical nodes of [lo, hi]
    while (l < h) {
      if (l & 1) fn(l++);
      if (h & 1) fn(--h);
      l /= 2;
      h /= 2;
    }
  }

  std::vector<Ranks> ranks_;
  std::size_t leaves_ = 1;
  struct Slot {
    std::uint32_t begin, fill;  // entries_[begin, fill) are in use
  };
  std::vector<Slot> slots_;
  std::vector<Payload> entries_;
  bool complete_ = false;
  bool too_large_ = false;
};

}  // namespace tensormem::planning
