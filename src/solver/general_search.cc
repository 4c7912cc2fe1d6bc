// SPDX-License-Identifier: Apache-2.0
#include "solver/general_search.h"

#include <algorithm>
#include <tuple>

#include "core/checked_math.h"

namespace tensormem::solver {

std::uint64_t GeneralSearch::height() const {
  std::uint64_t h = inst_.base;
  for (std::size_t i = 0; i < inst_.items.size(); ++i)
    h = std::max(h, offset_[i] + inst_.items[i].height);
  return h;
}

// No overlap with placed items or obstacles, and within the capacity.
bool GeneralSearch::Fits(std::uint32_t item, std::uint64_t offset) const {
  const Item& it = inst_.items[item];
  if (offset < inst_.base || internal::SaturatingAdd(offset, it.height) > capacity_) return false;
  for (std::uint32_t p = it.piece_begin; p < it.piece_end; ++p) {
    const Piece& a = inst_.pieces[p];
    const std::uint64_t lo = offset + a.lo, hi = offset + a.hi;
    for (const Obstacle& ob : inst_.obstacles)
      if (ob.begin < a.end && a.begin < ob.end && ob.lo < hi && lo < ob.hi) return false;
    for (std::uint32_t c : order_) {
      const Item& ci = inst_.items[c];
      if (ci.first_section >= a.end || a.begin >= ci.end_section) continue;
      for (std::uint32_t q = ci.piece_begin; q < ci.piece_end; ++q) {
        const Piece& b = inst_.pieces[q];
        if (b.begin < a.end && a.begin < b.end && offset_[c] + b.lo < hi && lo < offset_[c] + b.hi)
          return false;
      }
    }
  }
  return true;
}

void GeneralSearch::Candidates(std::int32_t last, std::vector<Candidate>* out) const {
  out->clear();
  for (std::uint32_t y = 0; y < inst_.items.size(); ++y) {
    if (placed_[y]) continue;
    const Item& it = inst_.items[y];
    if (it.twin >= 0 && !placed_[static_cast<std::uint32_t>(it.twin)]) continue;
    std::vector<std::pair<std::uint64_t, bool>> offsets{{inst_.base, true}};
    auto touch = [&](std::uint64_t top, std::uint64_t own_lo, bool without_last) {
      if (top < own_lo) return;  // would need a negative offset
      offsets.push_back({AlignUpSat(top - own_lo, it.alignment), without_last});
    };
    for (std::uint32_t p = it.piece_begin; p < it.piece_end; ++p) {
      const Piece& a = inst_.pieces[p];
      for (const Obstacle& ob : inst_.obstacles)
        if (ob.begin < a.end && a.begin < ob.end) touch(ob.hi, a.lo, true);
      for (std::uint32_t c : order_) {
        const Item& ci = inst_.items[c];
        for (std::uint32_t q = ci.piece_begin; q < ci.piece_end; ++q) {
          const Piece& b = inst_.pieces[q];
          if (b.begin < a.end && a.begin < b.end)
            touch(offset_[c] + b.hi, a.lo, static_cast<std::int32_t>(c) != last);
        }
      }
    }
    std::sort(offsets.begin(), offsets.end(),
              [](const auto& l, const auto& r) { return l.first != r.first ? l.first < r.first : l.second > r.second; });
    for (std::size_t k = 0; k < offsets.size(); ++k) {
      if (k > 0 && offsets[k].first == offsets[k - 1].first) continue;  // kept the "without" one
      if (Fits(y, offsets[k].first))
        out->push_back({offsets[k].first, it.rank, y, offsets[k].second});
    }
  }
  std::sort(out->begin(), out->end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.offset, a.rank) < std::tie(b.offset, b.rank);
  });
}

bool GeneralSearch::Dfs(std::int32_t last) {
  if (order_.size() == inst_.items.size()) return true;
  std::vector<Candidate> cands;
  Candidates(last, &cands);
  for (const Candidate& c : cands) {
    if (last >= 0 && static_cast<std::int32_t>(c.item) < last && c.without_last) continue;
    ++nodes_;
    if (!control_->Tick(inst_.items.size() * (order_.size() + 1)) ||
        nodes_ - start_nodes_ > budget_) {
      limit_hit_ = true;
      return false;
    }
    placed_[c.item] = 1;
    offset_[c.item] = c.offset;
    order_.push_back(c.item);
    if (Dfs(static_cast<std::int32_t>(c.item))) return true;
    order_.pop_back();
    placed_[c.item] = 0;
    if (limit_hit_) return false;
  }
  return false;
}

SearchOutcome GeneralSearch::Run(std::uint64_t capacity, std::uint64_t node_budget,
                                 SearchControl& control) {
  capacity_ = capacity;
  budget_ = node_budget;
  start_nodes_ = nodes_;
  control_ = &control;
  limit_hit_ = false;
  exhausted_unproven_ = false;
  offset_.assign(inst_.items.size(), 0);
  placed_.assign(inst_.items.size(), 0);
  order_.clear();
  if (Dfs(-1)) return SearchOutcome::kFound;
  if (limit_hit_) return SearchOutcome::kLimit;
  if (!inst_.unit_alignment) {
    const SearchOutcome every = EveryAlignedOffset();
    exhausted_unproven_ = every == SearchOutcome::kLimit && !limit_hit_;
    return every;
  }
  return SearchOutcome::kExhausted;
}

SearchOutcome GeneralSearch::EveryAlignedOffset() {
  double leaves = 1;
  for (const Item& it : inst_.items) {
    const std::uint64_t lo = AlignUpSat(inst_.base, it.alignment);
    if (lo > capacity_ || it.height > capacity_ - lo) return SearchOutcome::kExhausted;  // fits nowhere
    leaves *= static_cast<double>((capacity_ - it.height - lo) / it.alignment + 1);
    if (leaves > kMaxAlignedLeaves) return SearchOutcome::kLimit;
  }
  offset_.assign(inst_.items.size(), 0);
  placed_.assign(inst_.items.size(), 0);
  order_.clear();
  if (PlaceAt(0)) return SearchOutcome::kFound;
  return limit_hit_ ? SearchOutcome::kLimit : SearchOutcome::kExhausted;
}

bool GeneralSearch::PlaceAt(std::uint32_t item) {
  if (item == inst_.items.size()) return true;
  const Item& it = inst_.items[item];
  std::uint64_t o = AlignUpSat(inst_.base, it.alignment);
  // An identical item before this one: any plan with the two the other way
  // round is this one with them swapped.
  if (it.twin >= 0)
    o = std::max(o, AlignUpSat(offset_[static_cast<std::uint32_t>(it.twin)] + 1, it.alignment));
  for (; o <= capacity_ && it.height <= capacity_ - o; o += it.alignment) {
    ++nodes_;
    if (!control_->Tick(inst_.items.size() * (order_.size() + 1)) || nodes_ - start_nodes_ > budget_) {
      limit_hit_ = true;
      return false;
    }
    if (!Fits(item, o)) continue;
    placed_[item] = 1;
    offset_[item] = o;
    order_.push_back(item);
    if (PlaceAt(item + 1)) return true;
    order_.pop_back();
    placed_[item] = 0;
    if (limit_hit_) return false;
  }
  return false;
}

}  // namespace tensormem::solver
