// SPDX-License-Identifier: Apache-2.0
#include "solver/skyline_search.h"

#include <algorithm>
#include <bit>
#include <span>
#include <tuple>
#include <cstdio>
#include <cstdlib>

#include "core/checked_math.h"
#include "solver/shuffle.h"

namespace tensormem::solver {
namespace {

using internal::Uint128;

// a + b <= c without overflow.
inline bool SumFits(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return static_cast<Uint128>(a) + b <= c;
}
inline bool SumFits(std::uint64_t a, std::uint64_t b, std::uint64_t d, std::uint64_t c) {
  return static_cast<Uint128>(a) + b + d <= c;
}

// The pieces of `it`: its rectangles in (section, byte) space.
inline std::span<const Piece> PiecesOf(const Instance& inst, const Item& it) {
  return {inst.pieces.data() + it.piece_begin, it.piece_end - it.piece_begin};
}

// Calls f(piece, section) for every section of every piece of `it`, in
// order, until f returns false: false then, else true.
template <typename F>
inline bool ForEachPieceSection(const Instance& inst, const Item& it, F&& f) {
  for (const Piece& pc : PiecesOf(inst, it))
    for (std::uint32_t s = pc.begin; s < pc.end; ++s)
      if (!f(pc, s)) return false;
  return true;
}

}  // namespace

// ---- MaxAddTree ----------------------------------------------------------

void SkylineSearch::MaxAddTree::Build(const std::vector<std::uint64_t>& values) {
  n_ = static_cast<std::uint32_t>(values.size());
  // Halving [l, r) at the midpoint, a node at depth d has index < 2^(d+1)
  // and leaves are at depth <= ceil(log2 n): 2 x bit_ceil(n) nodes suffice
  // (4n was up to twice that: 30 MB on a 336,250-buffer trace).
  max_.assign(2 * std::bit_ceil(std::max<std::size_t>(n_, 1)), 0);
  add_.assign(max_.size(), 0);
  if (n_ > 0) Build(1, 0, n_, values);
}

void SkylineSearch::MaxAddTree::Build(std::size_t node, std::uint32_t l, std::uint32_t r,
                                      const std::vector<std::uint64_t>& v) {
  if (r - l == 1) {
    max_[node] = static_cast<std::int64_t>(v[l]);
    return;
  }
  const std::uint32_t m = l + (r - l) / 2;
  Build(2 * node, l, m, v);
  Build(2 * node + 1, m, r, v);
  max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
}

void SkylineSearch::MaxAddTree::Add(std::uint32_t lo, std::uint32_t hi, std::int64_t delta) {
  if (lo < hi) Add(1, 0, n_, lo, hi, delta);
}

void SkylineSearch::MaxAddTree::Add(std::size_t node, std::uint32_t l, std::uint32_t r,
                                    std::uint32_t lo, std::uint32_t hi, std::int64_t delta) {
  if (hi <= l || r <= lo) return;
  if (lo <= l && r <= hi) {
    max_[node] += delta;
    add_[node] += delta;
    return;
  }
  const std::uint32_t m = l + (r - l) / 2;
  Add(2 * node, l, m, lo, hi, delta);
  Add(2 * node + 1, m, r, lo, hi, delta);
  max_[node] = add_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
}

std::uint64_t SkylineSearch::MaxAddTree::Max(std::uint32_t lo, std::uint32_t hi) const {
  if (lo >= hi) return 0;
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, Max(1, 0, n_, lo, hi)));
}

std::int64_t SkylineSearch::MaxAddTree::Max(std::size_t node, std::uint32_t l, std::uint32_t r,
                                            std::uint32_t lo, std::uint32_t hi) const {
  if (hi <= l || r <= lo) return INT64_MIN / 2;
  if (lo <= l && r <= hi) return max_[node];
  const std::uint32_t m = l + (r - l) / 2;
  return add_[node] + std::max(Max(2 * node, l, m, lo, hi), Max(2 * node + 1, m, r, lo, hi));
}

// ---- SkylineSearch -------------------------------------------------------

SkylineSearch::SkylineSearch(const Instance& instance, const SkylineOptions& options)
    : inst_(instance), options_(options) {}

std::uint64_t SkylineSearch::height() const {
  std::uint64_t h = inst_.base;
  for (std::size_t i = 0; i < inst_.items.size(); ++i)
    h = std::max(h, offset_[i] + inst_.items[i].height);
  return h;
}

// The highest top of x (placed at `offset`) over the sections y occupies; 0
// when they share none.
std::uint64_t SkylineSearch::SharedTop(std::uint32_t xi, std::uint32_t yi,
                                       std::uint64_t offset) const {
  const Item& x = inst_.items[xi];
  const Item& y = inst_.items[yi];
  if (x.first_section >= y.end_section || y.first_section >= x.end_section) return 0;
  if (x.plain && y.plain) return offset + x.height;
  std::uint64_t reach = 0;
  for (const Piece& px : PiecesOf(inst_, x))
    for (const Piece& py : PiecesOf(inst_, y))
      if (px.begin < py.end && py.begin < px.end) reach = std::max(reach, px.hi);
  return reach == 0 ? 0 : offset + reach;
}

// May `item` go to `level` now: its skyline offset is the level, its
// identical predecessor is placed, and it crosses no section blocked there.
bool SkylineSearch::Eligible(std::uint32_t item, std::uint64_t level) const {
  const Item& it = inst_.items[item];
  if (am_[item] != level) {
    // Floating: a buffer below the level may take it when aligned and clear.
    if (!floating_ || am_[item] > level || level % it.alignment != 0 ||
        (it.obstacle_begin != it.obstacle_end && LowestFreeOffset(inst_, it, level) != level))
      return false;
  }
  if (it.twin >= 0 && !placed_[static_cast<std::uint32_t>(it.twin)]) return false;
  return active_blocks_ == 0 ||
         ForEachPieceSection(inst_, it, [&](const Piece&, std::uint32_t s) { return blocked_[s] != level; });
}

// Finds the point to branch on: the leftmost section a candidate at the
// frame's level starts in, raising the level while there is none. False
// when the node is dead.
bool SkylineSearch::Prepare(Frame& f) {
  const Comp& c = comps_[f.comp];
  for (;;) {
    std::uint32_t point = UINT32_MAX;
    std::uint64_t above = UINT64_MAX;
    const bool rtl = options_.branching == Branching::kRightPoint;
    const bool lowest = options_.branching == Branching::kLowest ||
                        options_.branching == Branching::kLowestFloating;
    for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k) {
      const std::uint32_t y = pool_[k];
      const std::uint64_t a = am_[y];
      if (a > f.level) {
        above = std::min(above, a);
      } else if ((a == f.level || floating_) && !f.closed && Eligible(y, f.level)) {
        if (lowest) {
          if (!f.has_min_rank || rank_[y] > f.min_rank) point = 0;
          continue;
        }
        // Right to left: sections counted from the end.
        const std::uint32_t p = rtl ? inst_.num_sections - inst_.pieces[inst_.items[y].piece_end - 1].end
                                    : inst_.pieces[inst_.items[y].piece_begin].begin;
        point = std::min(point, p);
      }
    }
    if (point != UINT32_MAX) {
      if (!TilingFits(f)) return false;
      f.point = point;
      f.prepared = true;
      if (options_.branching == Branching::kLeftFit && floors_) {
        std::uint32_t e = point;
        while (e < c.sec_hi && floor_[e] <= f.level) ++e;
        f.run_end = e;
        f.left_floor = point > c.sec_lo ? floor_[point - 1] : capacity_;
        f.right_floor = e < c.sec_hi ? floor_[e] : capacity_;
      }
      return true;
    }
    if (above == UINT64_MAX) return false;  // nothing can rise any more
    f.level = above;
    f.closed = false;
    f.has_min_rank = false;
    if (options_.dominance)
      for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k) {
        const std::uint32_t y = pool_[k];
        if (SumFits(am_[y], inst_.items[y].height, f.level)) return false;
      }
    if (!ReleasesFit(f.comp, f.level)) return false;
  }
}

// kLeftFit's order: fit class (0 best) above, rank below (rank alone
// without floors).
std::uint64_t SkylineSearch::FitKey(const Frame& f, std::uint32_t item) const {
  if (!floors_) return rank_[item];
  const Item& it = inst_.items[item];
  const std::uint64_t top = f.level + it.height;
  const bool fills = it.end_section == f.run_end;
  std::uint64_t cls = 3;
  if (fills && (top == f.left_floor || top == f.right_floor))
    cls = 0;
  else if (fills)
    cls = 1;
  else if (top == f.left_floor)
    cls = 2;
  return (cls << 32) | rank_[item];
}

std::int32_t SkylineSearch::NextCandidate(const Frame& f) const {
  const Comp& c = comps_[f.comp];
  std::int32_t best = -1;
  std::uint32_t best_rank = UINT32_MAX;
  std::uint64_t best_key = UINT64_MAX;
  for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k) {
    const std::uint32_t y = pool_[k];
    const Item& it = inst_.items[y];
    if (am_[y] != f.level && !floating_) continue;
    switch (options_.branching) {
      case Branching::kLeftFit: {
        if (inst_.pieces[it.piece_begin].begin != f.point) continue;
        const std::uint64_t key = FitKey(f, y);
        if ((f.started && key <= f.prev_key) || key >= best_key || !Eligible(y, f.level)) continue;
        best = static_cast<std::int32_t>(y);
        best_key = key;
        continue;
      }
      case Branching::kLeftPoint:
        if (inst_.pieces[it.piece_begin].begin != f.point) continue;
        break;
      case Branching::kRightPoint:
        if (inst_.num_sections - inst_.pieces[it.piece_end - 1].end != f.point) continue;
        break;
      case Branching::kLowest:
      case Branching::kLowestFloating:
        if (f.has_min_rank && rank_[y] <= f.min_rank) continue;
        break;
    }
    if (f.started && rank_[y] <= f.prev_rank) continue;
    if (rank_[y] >= best_rank || !Eligible(y, f.level)) continue;
    best = static_cast<std::int32_t>(y);
    best_rank = rank_[y];
  }
  return best;
}

bool SkylineSearch::Place(std::uint32_t item, std::uint32_t comp, std::uint64_t offset) {
  Step st;
  st.item = item;
  st.comp = comp;
  st.list_pos = pos_[item];
  st.am_mark = am_trail_.size();
  st.floor_mark = floor_trail_.size();
  steps_.push_back(st);
  placed_[item] = 1;
  offset_[item] = offset;
  Comp& c = comps_[comp];
  const std::uint32_t q = c.begin + c.count - 1;
  const std::uint32_t p = pos_[item];
  std::swap(pool_[p], pool_[q]);
  pos_[pool_[p]] = p;
  pos_[item] = q;
  --c.count;
  const Item& it = inst_.items[item];
  for (const Piece& pc : PiecesOf(inst_, it)) {
    remaining_.Add(pc.begin, pc.end, -static_cast<std::int64_t>(pc.hi));
    for (std::uint32_t s = pc.begin; s < pc.end; ++s) rem_[s] -= pc.hi;
    if (floors_)
      for (std::uint32_t s = pc.begin; s < pc.end; ++s)
        if (offset + pc.hi > floor_[s]) {
          floor_trail_.push_back({s, floor_[s]});
          floor_[s] = offset + pc.hi;
        }
  }
  bool cut_hit = false;
  for (std::uint32_t k = it.first_section + 1; k < it.end_section; ++k) cut_hit |= --cut_[k] == 0;
  return cut_hit;
}

void SkylineSearch::Block(std::uint32_t section, std::uint64_t level) {
  Step st;
  st.block = true;
  st.section = section;
  st.prev_blocked = blocked_[section];
  st.am_mark = am_trail_.size();
  st.floor_mark = floor_trail_.size();
  steps_.push_back(st);
  blocked_[section] = level;
  ++active_blocks_;
}

void SkylineSearch::UndoTo(std::size_t mark) {
  while (steps_.size() > mark) {
    const Step st = steps_.back();
    steps_.pop_back();
    if (st.block) {
      blocked_[st.section] = st.prev_blocked;
      --active_blocks_;
      continue;
    }
    while (am_trail_.size() > st.am_mark) {
      am_[am_trail_.back()] = am_old_.back();
      am_old_.pop_back();
      am_trail_.pop_back();
    }
    while (floor_trail_.size() > st.floor_mark) {
      floor_[floor_trail_.back().first] = floor_trail_.back().second;
      floor_trail_.pop_back();
    }
    const Item& it = inst_.items[st.item];
    for (std::uint32_t k = it.first_section + 1; k < it.end_section; ++k) ++cut_[k];
    for (const Piece& pc : PiecesOf(inst_, it)) {
      remaining_.Add(pc.begin, pc.end, static_cast<std::int64_t>(pc.hi));
      for (std::uint32_t s = pc.begin; s < pc.end; ++s) rem_[s] += pc.hi;
    }
    Comp& c = comps_[st.comp];
    const std::uint32_t q = c.begin + c.count;  // where the item went
    ++c.count;
    std::swap(pool_[st.list_pos], pool_[q]);
    pos_[pool_[st.list_pos]] = st.list_pos;
    pos_[pool_[q]] = q;
    placed_[st.item] = 0;
  }
}

bool SkylineSearch::SectionsHold(std::uint32_t item, std::uint32_t comp) const {
  if (!options_.section_inference) return true;
  const Item& it = inst_.items[item];
  const std::uint64_t o = offset_[item];
  for (const Piece& p : PiecesOf(inst_, it)) {
    if (!SumFits(o, p.hi, remaining_.Max(p.begin, p.end), capacity_)) {
      BlameSections(p.begin, p.end);
      return false;
    }
  }
  const Comp& c = comps_[comp];
  return SumFits(o, remaining_.Max(c.sec_lo, c.sec_hi), capacity_);
}

void SkylineSearch::BlameSections(std::uint32_t lo, std::uint32_t hi) const {
  if (options_.section_failures == nullptr) return;
  for (std::uint32_t s = lo; s < hi; ++s) ++(*options_.section_failures)[s];
}

void SkylineSearch::BlameItem(std::uint32_t item) const {
  if (options_.section_failures == nullptr) return;
  const Item& it = inst_.items[item];
  for (const Piece& pc : PiecesOf(inst_, it)) BlameSections(pc.begin, pc.end);
}

// Brings the skyline offsets of `comp` up to date after `placed` went down,
// and checks every unplaced item can still fit and is not dominated.
bool SkylineSearch::Update(std::uint32_t comp, std::uint32_t placed) {
  const Comp& c = comps_[comp];
  const std::uint64_t o = offset_[placed];
  for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k) {
    const std::uint32_t y = pool_[k];
    const Item& it = inst_.items[y];
    const std::uint64_t top = SharedTop(placed, y, o);
    // am = LowestFreeOffset(highest top below): when top <= am, am is
    // already the lowest free offset >= top, so only a higher top moves it.
    if (top > am_[y]) {
      am_trail_.push_back(y);
      am_old_.push_back(am_[y]);
      am_[y] = LowestFreeOffset(inst_, it, top);
    }
    if (!SumFits(am_[y], it.height, capacity_)) {
      BlameItem(y);
      return false;
    }
    if (options_.dominance && SumFits(am_[y], it.height, o)) return false;
  }
  return true;
}

// The lowest offset `item` can still take once the level is `level`: its
// skyline offset, at least the level; below the level an item is placed
// only on top of something placed later, so strictly above it.
std::uint64_t SkylineSearch::Release(std::uint32_t item, std::uint64_t level) const {
  const std::uint64_t r = am_[item];
  if (r <= level && !Eligible(item, level))
    return AlignUpSat(level + 1, inst_.items[item].alignment);
  return std::max(r, level);
}

// Per section, the unplaced items stacked in order of the lowest offset each
// can still take (one-machine scheduling with release times: that order
// gives the lowest possible top) must end within the capacity. That top is
// the maximum over releases R of R + the section's bytes of the items
// released at R or later, so the items are added to per-section sums in
// decreasing release order, and a sum must stay within capacity - R as the
// items released at R join it (a sum only grows and R only falls, so a
// section is checked whenever it grows). Releases R with R + the most
// unplaced bytes of any section within the capacity cannot fail: only the
// items released above capacity - that most are added (few on busy
// traces, most of them near the bottom of a tight search).
// Busy traces, where the items span thousands of sections: the sums as a
// segment tree with range add and maximum.
bool SkylineSearch::ReleasesFit(std::uint32_t comp, std::uint64_t level) {
  if (!options_.section_inference) return true;
  const Comp& c = comps_[comp];
  if (c.count == 0) return true;
  if (!CollectReleases(c, level)) return false;
  if (releases_.empty()) return true;
  if (!options_.release_order) return LeastReleasesFit(c, level);
  const std::uint32_t leaves = std::bit_ceil(std::max<std::uint32_t>(c.sec_hi - c.sec_lo, 1));
  const bool trees = UseSumTree(leaves);
  if (!trees && !KeepReleasesOfTightSections(c)) return true;
  // The check's answer does not depend on the order of equal releases (a
  // group's sums are exact once all of it is in), but the blame does: it
  // goes to the item, or the section, where the sums first fail, and weighted
  // restarts follow the blame.
  SortReleasesHighestFirst();
  return trees ? StackedSumsFitInTree(c, leaves) : StackedSumsFit(c);
}

// releases_: the unplaced items whose release can fail (R + the most
// unplaced bytes of a section above the capacity), without those at the
// least release (they come last, and with them every sum is the section's
// unplaced bytes, checked here). False when that check fails.
bool SkylineSearch::CollectReleases(const Comp& c, std::uint64_t level) {
  const std::uint64_t most = remaining_.Max(c.sec_lo, c.sec_hi);
  releases_.clear();
  std::uint64_t least = UINT64_MAX;
  for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k) {
    const std::uint32_t y = pool_[k];
    const std::uint64_t r = Release(y, level);
    least = std::min(least, r);
    if (SumFits(r, most, capacity_)) continue;  // its release cannot fail
    releases_.push_back({r, y});
  }
  // The fullest section cannot hold its bytes above the least release.
  if (!SumFits(least, most, capacity_)) return false;
  std::erase_if(releases_, [least](const auto& ry) { return ry.first == least; });
  return true;
}

// Weaker and cheaper (SkylineOptions::release_order off): per section, the
// least release of the items covering it + its unplaced bytes.
bool SkylineSearch::LeastReleasesFit(const Comp& c, std::uint64_t level) {
  std::vector<std::uint64_t>& lo = section_scratch_;
  for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s) lo[s] = UINT64_MAX;
  for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k) {
    const std::uint32_t y = pool_[k];
    const std::uint64_t r = Release(y, level);
    ForEachPieceSection(inst_, inst_.items[y], [&](const Piece&, std::uint32_t s) {
      lo[s] = std::min(lo[s], r);
      return true;
    });
  }
  for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s)
    if (rem_[s] != 0 && !SumFits(lo[s], rem_[s], capacity_)) return false;
  return true;
}

// The sums as a segment tree when the releases' pieces span many sections
// (busy traces), per section otherwise (SkylineOptions::trees).
bool SkylineSearch::UseSumTree(std::uint32_t leaves) const {
  if (options_.trees != SkylineOptions::Trees::kAuto) return options_.trees == SkylineOptions::Trees::kAlways;
  std::uint64_t span_total = 0, pieces = 0;
  for (const auto& ry : releases_) {
    for (const Piece& pc : PiecesOf(inst_, inst_.items[ry.second])) {
      span_total += pc.end - pc.begin;
      ++pieces;
    }
  }
  return span_total > 2 * std::uint64_t{leaves} + 2 * pieces * std::bit_width(leaves);
}

// Short spans: a pass finds the sections whose stack can end above the
// capacity (the highest release covering one + its unplaced bytes exceeds
// it), and only the items covering one of those are kept (the others only
// lower the sums of sections that cannot fail). False when none is tight:
// the releases fit.
bool SkylineSearch::KeepReleasesOfTightSections(const Comp& c) {
  std::vector<std::uint64_t>& hi = section_scratch_;
  for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s) hi[s] = 0;
  for (const auto& release : releases_) {
    // Named locals, not a structured binding: clang 14 cannot capture those.
    const std::uint64_t r = release.first;
    const std::uint32_t y = release.second;
    ForEachPieceSection(inst_, inst_.items[y], [&](const Piece&, std::uint32_t s) {
      hi[s] = std::max(hi[s], r);
      return true;
    });
  }
  std::vector<std::uint32_t>& tight = tight_count_;  // tight sections before s
  tight[c.sec_lo] = 0;
  for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s)
    tight[s + 1] = tight[s] + (rem_[s] != 0 && !SumFits(hi[s], rem_[s], capacity_) ? 1 : 0);
  if (tight[c.sec_hi] == 0) return false;
  std::erase_if(releases_, [&](const auto& ry) {
    for (const Piece& pc : PiecesOf(inst_, inst_.items[ry.second]))
      if (tight[pc.end] != tight[pc.begin]) return false;
    return true;
  });
  return true;
}

// The items added highest release first to the sections' sums (a segment
// tree with range add and maximum): each sum within capacity - R.
bool SkylineSearch::StackedSumsFitInTree(const Comp& c, std::uint32_t leaves) {
  sums_.Reset(leaves);
  for (const auto& release : releases_) {
    // Named locals, not a structured binding: clang 14 cannot capture those.
    const std::uint64_t r = release.first;
    const std::uint32_t y = release.second;
    for (const Piece& pc : PiecesOf(inst_, inst_.items[y])) sums_.Add(pc.begin - c.sec_lo, pc.end - c.sec_lo, pc.hi);
    if (!SumFits(r, sums_.Max(), capacity_)) {
      BlameItem(y);  // the tree does not say which section
      return false;
    }
  }
  return true;
}

// The same, the sums per section.
bool SkylineSearch::StackedSumsFit(const Comp& c) {
  std::vector<std::uint64_t>& sum = section_scratch_;
  for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s) sum[s] = 0;
  for (const auto& release : releases_) {
    // Named locals, not a structured binding: clang 14 cannot capture those.
    const std::uint64_t r = release.first;
    const std::uint32_t y = release.second;
    const bool fits = ForEachPieceSection(inst_, inst_.items[y], [&](const Piece& pc, std::uint32_t s) {
      sum[s] += pc.hi;  // <= the section's unplaced bytes: no overflow
      if (SumFits(r, sum[s], capacity_)) return true;
      BlameSections(s, s + 1);
      return false;
    });
    if (!fits) return false;
  }
  return true;
}

std::uint64_t SkylineSearch::HoleBytes(std::uint32_t s, std::uint64_t from, std::uint64_t min_size) const {
  const std::vector<std::uint64_t>& lo = inst_.section_obstacle_lo;
  const std::vector<std::uint64_t>& hi = inst_.section_obstacle_hi;
  std::uint64_t cursor = from, usable = 0;
  for (std::uint32_t k = inst_.section_obstacle_begin[s]; k < inst_.section_obstacle_begin[s + 1]; ++k) {
    if (hi[k] <= cursor) continue;
    if (lo[k] >= capacity_) break;
    if (lo[k] > cursor && lo[k] - cursor >= min_size) usable += lo[k] - cursor;
    cursor = std::max(cursor, hi[k]);
  }
  if (cursor < capacity_ && capacity_ - cursor >= min_size) usable += capacity_ - cursor;
  return usable;
}

void SkylineSearch::SortReleasesHighestFirst() {
  std::sort(releases_.begin(), releases_.end(), [this](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return std::tie(rank_[a.second], a.second) < std::tie(rank_[b.second], b.second);
  });
}

// Per section, the unplaced items stacked from the highest release down (as
// in ReleasesFit): those released at R or above lie in [R, capacity), clear
// of the obstacles and of each other, so their bytes must fit in the holes
// there at least as large as the smallest of them. Placed items lie below
// every release of a section they share (a release is at or above the
// placed tops over the item's sections), so only obstacles take room.
bool SkylineSearch::HolesFit(std::uint32_t comp, std::uint64_t level) {
  if (!holes_) return true;
  const Comp& c = comps_[comp];
  if (c.count == 0) return true;
  releases_.clear();
  for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k) {
    const std::uint32_t y = pool_[k];
    releases_.push_back({Release(y, level), y});
  }
  // The prefixes checked below, and so the answer, follow the order.
  SortReleasesHighestFirst();
  std::vector<std::uint64_t>& sum = section_scratch_;
  for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s) sum[s] = 0, min_scratch_[s] = UINT64_MAX;
  for (const auto& release : releases_) {
    // Named locals, not a structured binding: clang 14 cannot capture those.
    const std::uint64_t r = release.first;
    const std::uint32_t y = release.second;
    if (r >= capacity_) return false;
    const bool fits = ForEachPieceSection(inst_, inst_.items[y], [&](const Piece& pc, std::uint32_t s) {
      const std::uint64_t b = pc.hi - pc.lo;
      sum[s] += b;  // <= the section's unplaced bytes: no overflow
      min_scratch_[s] = std::min(min_scratch_[s], b);
      return sum[s] <= HoleBytes(s, r, min_scratch_[s]);
    });
    if (!fits) return false;
  }
  return true;
}

// ---- SumTree: range add, maximum of all leaves -------------------------

void SkylineSearch::SumTree::Reset(std::uint32_t leaves) {
  leaves_ = leaves;
  mx_.assign(2 * std::size_t{leaves}, 0);
  add_.assign(2 * std::size_t{leaves}, 0);
}

void SkylineSearch::SumTree::Add(std::uint32_t lo, std::uint32_t hi, std::uint64_t v) {
  // Bottom-up: the nodes covering [lo, hi) take v (their maximum and their
  // pending add), then the maxima above both ends are recomputed. Values
  // stay within a section's unplaced bytes: no overflow.
  std::size_t l = std::size_t{lo} + leaves_, h = std::size_t{hi} + leaves_;
  const std::size_t l0 = l, h0 = h - 1;
  for (; l < h; l >>= 1, h >>= 1) {
    if (l & 1) {
      mx_[l] += v;
      add_[l] += v;
      ++l;
    }
    if (h & 1) {
      --h;
      mx_[h] += v;
      add_[h] += v;
    }
  }
  // Both ends' ancestors, once each where their paths have met.
  for (std::size_t p = l0 >> 1, q = h0 >> 1; p >= 1; p >>= 1, q >>= 1) {
    mx_[p] = std::max(mx_[2 * p], mx_[2 * p + 1]) + add_[p];
    if (q != p) mx_[q] = std::max(mx_[2 * q], mx_[2 * q + 1]) + add_[q];
  }
}

// Zero-slack tiling. Every later placement in this component sits at >= the
// level L, and an unplaced item covering section s sits at >= floor(s) (the
// highest top placed in s), since its skyline offset is at least that. Call
// s tight when its unplaced bytes rem(s) = capacity - max(L, floor(s)):
// they fill [F, capacity) exactly (F = max(L, floor(s))), so one of them
// sits at F. Then F = floor(s) >= L (a tight section with floor(s) < L
// would need rem(s) bytes above L: already pruned), and that item's skyline
// offset is F now (it is >= floor(s) and can only grow; floating places at
// the level, which is then F). Items at one offset F are disjoint in time,
// so for every F the unplaced items of skyline offset F must tile the tight
// sections of floor F: a left-to-right pass over the section boundaries
// reachable by a chain of them, where a section not tight at F may be
// skipped. At F = L only the items that may still go to L count (clear of
// the sections blocked at L; after the level's rank bound in kLowest; none
// once the level is closed). Relaxed (still necessary): the identical-buffer
// and rank orders among the chain, and later rises of skyline offsets.
bool SkylineSearch::TilingFits(const Frame& f) {
  if (!tiling_) return true;
  const Comp& c = comps_[f.comp];
  if (f.level >= capacity_) return true;
  CollectTightFloors(c, f.level);
  if (tiling_floors_.empty()) return true;
  CollectTilingCandidates(f);
  std::size_t next_cand = 0;
  for (const std::uint64_t fl : tiling_floors_)
    if (!FloorIsTiled(c, f.level, fl, next_cand)) return false;
  return true;
}

// Section s's floor (at least `level`) when its unplaced bytes exactly fill
// the room above it (zero slack), else UINT64_MAX.
std::uint64_t SkylineSearch::TightFloor(std::uint32_t s, std::uint64_t level) const {
  if (rem_[s] == 0) return UINT64_MAX;
  const std::uint64_t fl = std::max(floor_[s], level);
  return fl < capacity_ && rem_[s] >= capacity_ - fl ? fl : UINT64_MAX;
}

// tiling_floors_: the component's tight floors, sorted, unique.
void SkylineSearch::CollectTightFloors(const Comp& c, std::uint64_t level) {
  std::vector<std::uint64_t>& floors = tiling_floors_;
  floors.clear();
  for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s) {
    const std::uint64_t fl = TightFloor(s, level);
    if (fl != UINT64_MAX && (floors.empty() || floors.back() != fl)) floors.push_back(fl);
  }
  std::sort(floors.begin(), floors.end());
  floors.erase(std::unique(floors.begin(), floors.end()), floors.end());
}

// tiling_cands_: (skyline offset, item) of the unplaced items whose skyline
// offset is a tight floor and that may still go there, sorted.
void SkylineSearch::CollectTilingCandidates(const Frame& f) {
  const Comp& c = comps_[f.comp];
  const bool lowest = options_.branching == Branching::kLowest || options_.branching == Branching::kLowestFloating;
  std::vector<std::pair<std::uint64_t, std::uint32_t>>& cands = tiling_cands_;
  cands.clear();
  for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k) {
    const std::uint32_t y = pool_[k];
    const std::uint64_t a = am_[y];
    if (!std::binary_search(tiling_floors_.begin(), tiling_floors_.end(), a)) continue;
    if (a == f.level) {
      if (lowest && (f.closed || (f.has_min_rank && rank_[y] <= f.min_rank))) continue;
      if (active_blocks_ > 0) {
        const Item& it = inst_.items[y];
        bool blocked = false;
        for (std::uint32_t s = it.first_section; s < it.end_section && !blocked; ++s)
          blocked = blocked_[s] == f.level;
        if (blocked) continue;
      }
    }
    cands.push_back({a, y});
  }
  std::sort(cands.begin(), cands.end());
}

// Whether the candidates at floor fl (from tiling_cands_[next_cand] on,
// which moves past them) cover every section tight at fl exactly: a pass
// over the sections, reaching from each reached one the ends of the
// candidates starting there (or the next section when it is not tight at fl).
bool SkylineSearch::FloorIsTiled(const Comp& c, std::uint64_t level, std::uint64_t fl, std::size_t& next_cand) {
  const std::vector<std::pair<std::uint64_t, std::uint32_t>>& cands = tiling_cands_;
  for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s) start_head_[s] = UINT32_MAX;
  for (; next_cand < cands.size() && cands[next_cand].first == fl; ++next_cand) {
    const std::uint32_t y = cands[next_cand].second;
    const std::uint32_t first = inst_.items[y].first_section;
    start_next_[y] = start_head_[first];
    start_head_[first] = y;
  }
  for (std::uint32_t s = c.sec_lo; s <= c.sec_hi; ++s) reach_[s] = 0;
  reach_[c.sec_lo] = 1;
  for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s) {
    if (!reach_[s]) continue;
    if (TightFloor(s, level) != fl) reach_[s + 1] = 1;
    for (std::uint32_t y = start_head_[s]; y != UINT32_MAX; y = start_next_[y]) reach_[inst_.items[y].end_section] = 1;
  }
  return reach_[c.sec_hi] != 0;
}

// Splits the active items of `comp` into groups that share no section.
bool SkylineSearch::TrySplit(std::uint32_t comp, Frame& split) {
  const Comp c = comps_[comp];
  std::vector<std::uint32_t> items(pool_.begin() + c.begin, pool_.begin() + c.begin + c.count);
  std::sort(items.begin(), items.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::tie(inst_.items[a].first_section, a) < std::tie(inst_.items[b].first_section, b);
  });
  std::vector<std::pair<std::size_t, std::uint32_t>> groups;  // (start index, end section)
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& it = inst_.items[items[k]];
    if (groups.empty() || it.first_section >= groups.back().second)
      groups.push_back({k, it.end_section});
    else
      groups.back().second = std::max(groups.back().second, it.end_section);
  }
  if (groups.size() < 2) return false;
  split.split = true;
  split.parent_comp = comp;
  split.pool_mark = pool_.size();
  split.comps_mark = comps_.size();
  split.first_comp = static_cast<std::uint32_t>(comps_.size());
  split.num_comps = static_cast<std::uint32_t>(groups.size());
  split.next = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::size_t from = groups[g].first;
    const std::size_t to = g + 1 < groups.size() ? groups[g + 1].first : items.size();
    Comp sub;
    sub.begin = static_cast<std::uint32_t>(pool_.size());
    sub.count = static_cast<std::uint32_t>(to - from);
    sub.sec_lo = inst_.items[items[from]].first_section;
    sub.sec_hi = groups[g].second;
    std::sort(items.begin() + static_cast<std::ptrdiff_t>(from),
              items.begin() + static_cast<std::ptrdiff_t>(to));
    for (std::size_t k = from; k < to; ++k) {
      pos_[items[k]] = static_cast<std::uint32_t>(pool_.size());
      pool_.push_back(items[k]);
    }
    comps_.push_back(sub);
  }
  split.rank_mark = rank_trail_.size();
  if (options_.regroup_ranks)
    for (std::uint32_t g = split.first_comp; g < split.first_comp + split.num_comps; ++g)
      RankGroup(g);
  return true;
}

// kTotalFirst's order recomputed for one group: by the highest bytes the
// unplaced items need during the item's lifetime (then longest, then
// largest, then the previous order). A group is a subproblem of its own;
// what decides which of its items is hardest to fit is its own congestion,
// not the whole problem's (placed buffers no longer compete for space). The
// group's items take the same set of rank values, so ranks stay distinct.
void SkylineSearch::RankGroup(std::uint32_t comp) {
  const Comp& c = comps_[comp];
  std::vector<std::uint32_t>& items = group_scratch_;
  std::vector<std::uint32_t>& ranks = rank_scratch_;
  items.assign(pool_.begin() + c.begin, pool_.begin() + c.begin + c.count);
  ranks.clear();
  for (std::uint32_t y : items) {
    ranks.push_back(rank_[y]);
    rank_trail_.push_back({y, rank_[y]});
    const Item& it = inst_.items[y];
    total_[y] = remaining_.Max(it.first_section, it.end_section);
  }
  std::sort(ranks.begin(), ranks.end());
  std::sort(items.begin(), items.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Item& x = inst_.items[a];
    const Item& y = inst_.items[b];
    if (total_[a] != total_[b]) return total_[a] > total_[b];
    if (x.lifetime != y.lifetime) return x.lifetime > y.lifetime;
    if (x.height != y.height) return x.height > y.height;
    return rank_[a] < rank_[b];
  });
  for (std::size_t k = 0; k < items.size(); ++k) rank_[items[k]] = ranks[k];
}

void SkylineSearch::FailSplit(const Frame& split) {
  UndoTo(split.mark);
  while (rank_trail_.size() > split.rank_mark) {
    rank_[rank_trail_.back().first] = rank_trail_.back().second;
    rank_trail_.pop_back();
  }
  pool_.resize(split.pool_mark);
  comps_.resize(split.comps_mark);
  const Comp& c = comps_[split.parent_comp];
  for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k) pos_[pool_[k]] = k;
}

std::int64_t SkylineSearch::RootKey(const Frame& root) {
  if (!options_.memo) return -1;
  const Comp& c = comps_[root.comp];
  std::vector<std::uint64_t>& key = key_scratch_;
  key.clear();
  key.push_back(root.level);
  key.push_back(root.has_min_rank ? root.min_rank : UINT64_MAX);
  const std::size_t items_at = key.size();
  for (std::uint32_t k = c.begin; k < c.begin + c.count; ++k)
    key.push_back((static_cast<std::uint64_t>(pool_[k]) << 1));
  std::sort(key.begin() + static_cast<std::ptrdiff_t>(items_at), key.end());
  const std::size_t n = key.size();
  for (std::size_t k = items_at; k < n; ++k) key.push_back(am_[key[k] >> 1]);
  if (active_blocks_ > 0)
    for (std::uint32_t s = c.sec_lo; s < c.sec_hi; ++s)
      if (blocked_[s] == root.level) key.push_back((static_cast<std::uint64_t>(s) << 1) | 1);
  std::uint64_t h = 0x9E3779B97F4A7C15ull;
  for (std::uint64_t w : key) h = (h ^ w) * 0x100000001B3ull + (h >> 29);
  auto it = failed_.find(h);
  if (it != failed_.end())
    for (std::uint32_t idx : it->second)
      if (keys_[idx] == key) return -2;
  if (key_words_ + key.size() > options_.memo_words) return -1;
  key_words_ += key.size();
  keys_.push_back(key);
  keys_.back().push_back(h);  // the hash rides along, for RecordFailure
  return static_cast<std::int64_t>(keys_.size() - 1);
}

void SkylineSearch::RecordFailure(std::int64_t key) {
  if (key < 0) return;
  std::vector<std::uint64_t>& k = keys_[static_cast<std::size_t>(key)];
  const std::uint64_t h = k.back();
  k.pop_back();
  failed_[h].push_back(static_cast<std::uint32_t>(key));
}

bool SkylineSearch::CompleteComponent() {
  for (;;) {
    const std::uint32_t done = frames_.back().comp;
    while (!frames_.empty() && !frames_.back().split && frames_.back().comp == done)
      frames_.pop_back();
    if (frames_.empty()) return true;
    Frame& s = frames_.back();  // a split frame
    if (++s.next < s.num_comps) {
      Frame root;
      root.comp = s.first_comp + s.next;
      root.mark = steps_.size();
      root.level = s.level;
      // Regrouped ranks are a new order: the old bound means nothing there
      // (dropping it only lets placements at this level come in any order).
      root.has_min_rank = s.has_min_rank && !options_.regroup_ranks;
      root.min_rank = s.min_rank;
      root.key = RootKey(root);
      // A state that failed before fails the split (it is on top).
      if (root.key != -2) frames_.push_back(root);
      return false;
    }
    // Every group of the split is placed: the enclosing component is solved.
    frames_.pop_back();
    if (frames_.empty()) return true;
  }
}

SearchOutcome SkylineSearch::Run(std::uint64_t capacity, std::uint64_t node_budget,
                                 SearchControl& control) {
  Start(capacity);
  return Continue(node_budget, control);
}

void SkylineSearch::Start(std::uint64_t capacity) {
  over_memory_ = false;
  capacity_ = capacity;
  floating_ = options_.branching == Branching::kLowestFloating;
  ResetPlacements();
  ChooseInferences();
  InitLoadsAndCuts();
  ResetPath();
  InitRanks();
  outcome_ = FirstOutcome();
  if (outcome_ == SearchOutcome::kLimit) frames_.push_back(Frame{});
}

// Nothing placed, blocked or floored yet.
void SkylineSearch::ResetPlacements() {
  const std::size_t n = inst_.items.size();
  const std::uint32_t S = inst_.num_sections;
  am_.resize(n);
  offset_.assign(n, 0);
  placed_.assign(n, 0);
  cut_.assign(S + 1, 0);
  blocked_.assign(S, UINT64_MAX);
  active_blocks_ = 0;
  section_scratch_.assign(S, 0);
  tight_count_.assign(S + 1, 0);
  rem_.assign(S, 0);
  floor_.assign(S, inst_.base);
  floor_trail_.clear();
}

// Which of the floor, tiling and hole inferences this instance keeps.
void SkylineSearch::ChooseInferences() {
  const std::size_t n = inst_.items.size();
  const std::uint32_t S = inst_.num_sections;
  // The floor trail holds up to the sum of the items' section spans (each
  // placement raises the floor of its whole span): kept only when that is
  // small (busy training traces have 10^7 and more).
  std::uint64_t spans = 0;
  for (std::size_t i = 0; i < n; ++i) spans += inst_.items[i].end_section - inst_.items[i].first_section;
  floors_ = spans <= (std::uint64_t{1} << 20);
  tiling_ = floors_ && options_.tiling && inst_.obstacles.empty();
  holes_ = options_.hole_inference && !inst_.section_obstacle_lo.empty();
  min_scratch_.assign(holes_ ? S : 0, 0);
  for (std::size_t i = 0; i < n && tiling_; ++i) tiling_ = inst_.items[i].plain;
  start_head_.assign(tiling_ ? S : 0, UINT32_MAX);
  start_next_.assign(tiling_ ? n : 0, UINT32_MAX);
  reach_.assign(tiling_ ? S + 1 : 0, 0);
}

// Each item's lowest free offset; per section the bytes still to place and
// the items living across its start (difference arrays: linear even when
// lifetimes are long).
void SkylineSearch::InitLoadsAndCuts() {
  const std::size_t n = inst_.items.size();
  const std::uint32_t S = inst_.num_sections;
  std::vector<std::uint64_t> rem_diff(S + 1, 0);
  std::vector<std::int64_t> cut_diff(S + 2, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Item& it = inst_.items[i];
    am_[i] = LowestFreeOffset(inst_, it, inst_.base);
    for (const Piece& pc : PiecesOf(inst_, it)) {
      rem_diff[pc.begin] += pc.hi;  // wraps back: sums fit
      rem_diff[pc.end] -= pc.hi;
    }
    if (it.end_section > it.first_section + 1) {
      ++cut_diff[it.first_section + 1];
      --cut_diff[it.end_section];
    }
  }
  std::uint64_t r = 0;
  std::int64_t c = 0;
  for (std::uint32_t s = 0; s < S; ++s) {
    r += rem_diff[s];
    rem_[s] = r;  // <= peak live bytes, which fits
  }
  for (std::uint32_t k = 0; k <= S; ++k) {
    c += cut_diff[k];
    cut_[k] = static_cast<std::uint32_t>(c);
  }
  remaining_.Build(rem_);
}

// One component of every item; no step, frame or recorded failure.
void SkylineSearch::ResetPath() {
  const std::size_t n = inst_.items.size();
  pool_.resize(n);
  pos_.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) pool_[i] = pos_[i] = i;
  comps_.assign(1, Comp{0, static_cast<std::uint32_t>(n), 0, inst_.num_sections});
  am_trail_.clear();
  am_old_.clear();
  steps_.clear();
  frames_.clear();
  keys_.clear();
  failed_.clear();
  key_words_ = 0;
}

// The branching order: the given ranks (or the instance's), shuffled by the
// seed of a restart.
void SkylineSearch::InitRanks() {
  const std::size_t n = inst_.items.size();
  rank_.resize(n);
  if (options_.ranks != nullptr && options_.ranks->size() == n) {
    std::copy(options_.ranks->begin(), options_.ranks->end(), rank_.begin());
  } else {
    for (std::size_t i = 0; i < n; ++i) rank_[i] = inst_.items[i].rank;
  }
  if (options_.shuffle_seed != 0) ShuffleFromSeed(std::span<std::uint32_t>(rank_), options_.shuffle_seed);
  rank_trail_.clear();
  total_.assign(n, 0);
}

// kFound with no item, kExhausted when the load or an item cannot fit the
// capacity, else kLimit (the search has to run).
SearchOutcome SkylineSearch::FirstOutcome() const {
  const std::size_t n = inst_.items.size();
  if (n == 0) return SearchOutcome::kFound;
  if (!SumFits(inst_.base, remaining_.Max(0, inst_.num_sections), capacity_)) return SearchOutcome::kExhausted;
  for (std::size_t i = 0; i < n; ++i)
    if (!SumFits(am_[i], inst_.items[i].height, capacity_)) return SearchOutcome::kExhausted;
  return SearchOutcome::kLimit;
}

SearchOutcome SkylineSearch::Continue(std::uint64_t node_budget, SearchControl& control) {
  if (outcome_ != SearchOutcome::kLimit) return outcome_;
  const std::uint64_t start_nodes = nodes_;
  while (!frames_.empty()) {
    Frame& f = frames_.back();
    if (f.split) {
      // Only reached after the group on top of it failed.
      const Frame split = f;
      frames_.pop_back();
      FailSplit(split);
      continue;
    }
    UndoTo(f.mark);
    if (!f.prepared && !Prepare(f)) {
      RecordFailure(f.key);
      frames_.pop_back();
      continue;
    }
    const std::uint32_t comp = f.comp;
    const std::uint64_t level = f.level;
    const std::int32_t next = NextCandidate(f);
    if (next < 0 && f.block_tried) {
      RecordFailure(f.key);
      frames_.pop_back();
      continue;
    }
    // Out of budget: this node has changed nothing yet (Prepare's work is
    // kept in the frame), so the next Continue picks it up here.
    if (nodes_ - start_nodes >= node_budget || !TakeNode(comp, control)) return SearchOutcome::kLimit;
    if (next < 0) {
      BranchOnBlock(f, comp, level);
      continue;
    }
    if (BranchOnItem(f, static_cast<std::uint32_t>(next), comp, level)) return outcome_ = SearchOutcome::kFound;
  }
  return outcome_ = SearchOutcome::kExhausted;
}

// Counts a node of component `comp`; false when the memory (over_memory_
// then) or the solve's limits stop the search first.
bool SkylineSearch::TakeNode(std::uint32_t comp, SearchControl& control) {
  if (options_.max_growing_bytes != 0 && GrowingBytes() > options_.max_growing_bytes) {
    over_memory_ = true;
    return false;
  }
  ++nodes_;
  const Comp& cur = comps_[comp];
  return control.Tick(cur.count + (cur.sec_hi - cur.sec_lo));
}

// The branch where no candidate goes to f's point at this level: closes the
// level (the lowest-first branchings) or blocks the point, and pushes the
// child frame unless that branch is dead already.
void SkylineSearch::BranchOnBlock(Frame& f, std::uint32_t comp, std::uint64_t level) {
  f.block_tried = true;
  Frame child;
  child.comp = comp;
  child.mark = steps_.size();
  child.level = level;
  if (options_.branching == Branching::kLowest || options_.branching == Branching::kLowestFloating) {
    // Nothing more goes to this level.
    child.closed = true;
  } else {
    // Nothing will occupy this point at this level.
    Block(options_.branching == Branching::kRightPoint ? inst_.num_sections - 1 - f.point : f.point, level);
    if (!ReleasesFit(comp, level) || !HolesFit(comp, level)) return;
    child.mark = steps_.size();
  }
  frames_.push_back(child);
}

// The branch that places item y at `level`, and pushes the child frame
// (or the frames of the split component) unless that branch is dead
// already. True when the plan is complete.
bool SkylineSearch::BranchOnItem(Frame& f, std::uint32_t y, std::uint32_t comp, std::uint64_t level) {
  f.started = true;
  f.prev_rank = rank_[y];
  if (options_.branching == Branching::kLeftFit) f.prev_key = FitKey(f, y);
  const bool cut_hit = Place(y, comp, level);
  if (!SectionsHold(y, comp)) return false;
  if (comps_[comp].count == 0) return CompleteComponent();
  if (!Update(comp, y)) return false;
  // The release bound costs most of a node; every other depth catches
  // nearly all it would (a dead child dies one level later).
  if (steps_.size() % 2 == 0 && (!ReleasesFit(comp, level) || !HolesFit(comp, level))) return false;
  Frame child;
  child.comp = comp;
  child.mark = steps_.size();
  child.level = level;
  child.has_min_rank = true;
  child.min_rank = rank_[y];
  if (!(cut_hit && options_.dynamic_decomposition && PushSplit(child))) frames_.push_back(child);
  return false;
}

// When placing left a cut in time that splits the component: pushes the
// split frame and the first group's frame (child: the frame the unsplit
// component would have had), and true.
bool SkylineSearch::PushSplit(const Frame& child) {
  Frame split = child;
  if (!TrySplit(child.comp, split)) return false;
  Frame first;
  first.comp = split.first_comp;
  first.mark = steps_.size();
  first.level = child.level;
  first.has_min_rank = split.has_min_rank && !options_.regroup_ranks;
  first.min_rank = split.min_rank;
  frames_.push_back(split);
  first.key = RootKey(first);
  if (first.key != -2) frames_.push_back(first);
  return true;
}

}  // namespace tensormem::solver
