// SPDX-License-Identifier: Apache-2.0
// The fast engine: depth-first search over canonical placements for
// instances whose buffers all occupy bytes from their offset up (plain
// buffers, gaps, windows starting at 0), with alignment and fixed obstacles.
//
// Canonical solutions. Take any plan and let every buffer fall as low as it
// can; among the plans of least total offset each buffer then rests on a
// buffer below it, on an obstacle, or at the base. Listed by offset (ties by
// the first time section they occupy), each buffer sits exactly at its
// "skyline offset": the lowest aligned offset at or above the highest top of
// the buffers already listed that share a time section with it, clear of
// obstacles. The search builds such lists, so it never loses the best plan.
//
// Branching: at the current level L (offsets only grow) the candidates are
// the unplaced buffers whose skyline offset is exactly L.
//  - kLowest (MiniMalloc's): any candidate, in static order, ties at one
//    level placed in that order; last branch: nothing more goes to L.
//  - kLeftPoint ("bottom-left point"): take the leftmost time section s a
//    candidate starts in; either one of the candidates starting in s goes to
//    L, or nothing will ever occupy (s, L): s is blocked at this level.
//  - kRightPoint: the same from the right.
//  - kLeftFit: kLeftPoint, candidates in best-fit order (see Branching).
// When no candidate is left the level rises to the next skyline offset. All
// three are complete; which one finds a plan soon depends on the instance
// (by orders of magnitude), hence the solver's portfolio.
//
// Pruning:
//  - dominance: every later buffer sits at >= L, so an unplaced buffer that
//    would fit entirely below L could drop there: the plan is not one of
//    least total offset (MiniMalloc's dominance check);
//  - capacity: a buffer whose skyline offset + size exceeds the capacity can
//    never be placed (skyline offsets only grow);
//  - section inference: per time section, the unplaced buffers, each no
//    lower than max(its skyline offset, L) (L + 1 when it crosses a blocked
//    section), stacked in order of those release offsets must end below the
//    capacity (exact for one section); and max(L, floor) + unplaced bytes
//    must fit in every section (a max-segment tree, checked per placement);
//  - hole inference (with obstacles): the same stacks per section, but
//    against the holes the obstacles leave in [release, capacity): the
//    items released at R or above lie in holes there, clear of the
//    obstacles, so their bytes fit in the holes at least as large as the
//    smallest of them (a smaller hole holds none of them); the section
//    inference counts the free bytes as one block, so the waste of small
//    holes between fixed buffers goes unseen there;
//  - tiling (zero slack): in a section whose unplaced bytes exactly fill
//    the room above its floor, some buffer must sit at that floor; for
//    every such floor the buffers whose skyline offset it is must tile
//    those sections exactly (a 1-D exact cover, see TilingFits);
//  - identical buffers are placed in index order (symmetry);
//  - dynamic decomposition: when no unplaced buffer crosses some section
//    boundary any more, the unplaced buffers split into groups that no
//    longer interact; each is solved alone, and if one fails the node fails
//    without trying the other groups' alternatives (an AND node).
// Iterative (an explicit stack), so deep instances do not exhaust the stack;
// every change is trailed and undone on backtrack.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "solver/instance.h"
#include "solver/search_control.h"

namespace tensormem::solver {

struct SkylineOptions {
  bool dominance = true;
  bool section_inference = true;
  bool dynamic_decomposition = true;
  // Section inference stacks the unplaced buffers of each section in
  // release order (stronger) instead of checking the least release +
  // unplaced bytes only.
  bool release_order = true;
  // Remember failed component states (nogoods) and fail them at once, in
  // up to memo_words 64-bit words.
  bool memo = true;
  std::size_t memo_words = std::size_t{1} << 23;  // 64 MiB
  // After a split, order each group's items by kTotalFirst's key computed
  // on the unplaced items alone (see RankGroup). For the kTotalFirst order.
  bool regroup_ranks = false;
  // Tiling: in a section whose unplaced bytes exactly fill the space from
  // its floor up (zero slack), the floor's byte must be covered by a buffer
  // placed at the floor; for every such floor the buffers whose skyline
  // offset it is must tile those sections (a 1-D exact cover, a pass over
  // the sections per floor; see TilingFits). Plain instances without
  // obstacles only.
  bool tiling = true;
  // Hole inference (see above): instances with obstacles only, while their
  // per-section lists stay under 2^22 entries.
  bool hole_inference = true;
  // Section inference on long spans keeps its per-section sums in a
  // segment tree when that is cheaper than the direct loops; tests force
  // either way (same answers, same nodes).
  enum class Trees { kAuto, kAlways, kNever };
  Trees trees = Trees::kAuto;
  // Nonzero: the static order (ranks) is shuffled at Start from this seed.
  std::uint64_t shuffle_seed = 0;
  // How a node branches (see above): on the leftmost or rightmost point of
  // the current level, or on any buffer of the level in static order
  // (MiniMalloc's way, ties in that order) with "close the level" last.
  Branching branching = Branching::kLowest;
  // The static order to use instead of the items' own ranks (Item::rank),
  // one per item; null: the items' ranks. Saves an Instance copy per order.
  const std::vector<std::uint32_t>* ranks = nullptr;
  // Nonzero: Continue stops (kLimit, over_memory() true, resumable) before a
  // node when GrowingBytes() exceeds it.
  std::size_t max_growing_bytes = 0;
  // Non-null (one entry per section): every failed check of a section adds
  // one to its entry (weighted restarts, SearchConfig::weighted).
  std::vector<std::uint32_t>* section_failures = nullptr;
};

class SkylineSearch {
 public:
  SkylineSearch(const Instance& instance, const SkylineOptions& options);

  // Looks for a placement with every top <= capacity, within node_budget
  // nodes of this run and the solve's limits: Start, then Continue.
  SearchOutcome Run(std::uint64_t capacity, std::uint64_t node_budget, SearchControl& control);
  // A search in steps: Start sets up the root; each Continue goes on where
  // the previous one stopped for up to node_budget more nodes. kLimit: not
  // finished (resumable unless the solve's limits were reached); kFound and
  // kExhausted are final and returned again by later calls.
  void Start(std::uint64_t capacity);
  SearchOutcome Continue(std::uint64_t node_budget, SearchControl& control);

  // After kFound: the offset of every item, and the highest top.
  const std::vector<std::uint64_t>& offsets() const { return offset_; }
  std::uint64_t height() const;
  std::uint64_t nodes() const { return nodes_; }
  // Bytes held by the path-dependent state (trails, frames, nogood memo):
  // what grows with the search, unlike the per-item and per-section arrays.
  bool over_memory() const { return over_memory_; }
  std::size_t GrowingBytes() const {
    // Capacities, not sizes: a backtrack keeps the vectors' peak allocation.
    return am_trail_.capacity() * sizeof(std::uint32_t) + am_old_.capacity() * sizeof(std::uint64_t) +
           floor_trail_.capacity() * sizeof(floor_trail_[0]) + steps_.capacity() * sizeof(Step) +
           frames_.capacity() * sizeof(Frame) + key_words_ * sizeof(std::uint64_t);
  }

 private:
  // Range add / range max over sections: the unplaced bytes per section.
  class MaxAddTree {
   public:
    void Build(const std::vector<std::uint64_t>& values);
    void Add(std::uint32_t lo, std::uint32_t hi, std::int64_t delta);  // [lo, hi)
    std::uint64_t Max(std::uint32_t lo, std::uint32_t hi) const;        // [lo, hi)

   private:
    void Build(std::size_t node, std::uint32_t l, std::uint32_t r,
               const std::vector<std::uint64_t>& v);
    void Add(std::size_t node, std::uint32_t l, std::uint32_t r, std::uint32_t lo,
             std::uint32_t hi, std::int64_t delta);
    std::int64_t Max(std::size_t node, std::uint32_t l, std::uint32_t r, std::uint32_t lo,
                     std::uint32_t hi) const;
    std::uint32_t n_ = 0;
    std::vector<std::int64_t> max_, add_;
  };

  struct Comp {  // a group of unplaced items solved on its own
    std::uint32_t begin = 0, count = 0;  // active items: pool_[begin, begin + count)
    std::uint32_t sec_lo = 0, sec_hi = 0;
  };
  // One step on the current path: a placement, or a section blocked at a level.
  struct Step {
    bool block = false;
    std::uint32_t item = 0, comp = 0, list_pos = 0;  // placements
    std::uint32_t section = 0;                       // blocks
    std::uint64_t prev_blocked = 0;
    std::size_t am_mark = 0;
    std::size_t floor_mark = 0;
  };
  struct Frame {
    bool split = false;
    std::uint32_t comp = 0;
    std::size_t mark = 0;  // steps_.size() at this node
    // Choice frames: the level, the point branched on, what was tried.
    std::uint64_t level = 0;
    bool prepared = false;
    std::uint32_t point = 0;
    bool started = false;
    std::uint32_t prev_rank = 0;
    // kLeftFit: candidates go in order of (fit class, rank); the last key
    // tried, and what the classes compare with (set by Prepare).
    std::uint64_t prev_key = 0;
    std::uint32_t run_end = 0;
    std::uint64_t left_floor = 0, right_floor = 0;
    bool block_tried = false;
    // kLowest: candidates at this level must rank after min_rank (when
    // has_min_rank); `closed` = nothing more goes to this level.
    bool has_min_rank = false;
    bool closed = false;
    std::uint32_t min_rank = 0;
    // Component roots: the index of the component's state in keys_ (-1:
    // not recorded), remembered as a failure when this frame fails.
    std::int64_t key = -1;
    // Split frames.
    std::uint32_t first_comp = 0, num_comps = 0, next = 0, parent_comp = 0;
    std::size_t pool_mark = 0, comps_mark = 0, rank_mark = 0;
  };

  std::uint64_t SharedTop(std::uint32_t x, std::uint32_t y, std::uint64_t offset) const;
  // Start's steps.
  void ResetPlacements();
  void ChooseInferences();
  void InitLoadsAndCuts();
  void ResetPath();
  void InitRanks();
  SearchOutcome FirstOutcome() const;
  // Continue's steps.
  bool TakeNode(std::uint32_t comp, SearchControl& control);
  void BranchOnBlock(Frame& f, std::uint32_t comp, std::uint64_t level);
  bool BranchOnItem(Frame& f, std::uint32_t y, std::uint32_t comp, std::uint64_t level);
  bool PushSplit(const Frame& child);
  bool Eligible(std::uint32_t item, std::uint64_t level) const;
  bool Prepare(Frame& f);
  std::int32_t NextCandidate(const Frame& f) const;
  std::uint64_t FitKey(const Frame& f, std::uint32_t item) const;
  bool Place(std::uint32_t item, std::uint32_t comp, std::uint64_t offset);
  void Block(std::uint32_t section, std::uint64_t level);
  bool SectionsHold(std::uint32_t item, std::uint32_t comp) const;
  // Weighted restarts: a failed check names sections [lo, hi), or those
  // `item` spans.
  void BlameSections(std::uint32_t lo, std::uint32_t hi) const;
  void BlameItem(std::uint32_t item) const;
  bool Update(std::uint32_t comp, std::uint32_t placed);
  std::uint64_t Release(std::uint32_t item, std::uint64_t level) const;
  bool ReleasesFit(std::uint32_t comp, std::uint64_t level);
  // ReleasesFit's steps (skyline_search.cc).
  bool CollectReleases(const Comp& c, std::uint64_t level);
  bool LeastReleasesFit(const Comp& c, std::uint64_t level);
  bool UseSumTree(std::uint32_t leaves) const;
  bool KeepReleasesOfTightSections(const Comp& c);
  bool StackedSumsFitInTree(const Comp& c, std::uint32_t leaves);
  bool StackedSumsFit(const Comp& c);
  bool HolesFit(std::uint32_t comp, std::uint64_t level);
  // Sorts releases_ highest first, equal releases by the search's rank (then
  // the item): the order is the search's own, the same with every standard
  // library (std::sort breaks ties differently in libstdc++ and libc++).
  void SortReleasesHighestFirst();
  // Free bytes of section s in [from, capacity_) in holes between obstacles
  // of at least min_size bytes.
  std::uint64_t HoleBytes(std::uint32_t s, std::uint64_t from, std::uint64_t min_size) const;
  bool TilingFits(const Frame& f);
  std::uint64_t TightFloor(std::uint32_t s, std::uint64_t level) const;
  void CollectTightFloors(const Comp& c, std::uint64_t level);
  void CollectTilingCandidates(const Frame& f);
  bool FloorIsTiled(const Comp& c, std::uint64_t level, std::uint64_t fl, std::size_t& next_cand);
  void UndoTo(std::size_t mark);
  bool TrySplit(std::uint32_t comp, Frame& split);
  void RankGroup(std::uint32_t comp);
  void FailSplit(const Frame& split);
  // The component on top is solved; continue with the next one. Returns
  // true when everything is placed.
  bool CompleteComponent();
  // The state of a component about to be searched from `root`: -2 when the
  // same state already failed in this run, else its index in keys_ (or -1
  // when the memory for states is spent).
  std::int64_t RootKey(const Frame& root);
  void RecordFailure(std::int64_t key);

  const Instance& inst_;
  SkylineOptions options_;
  std::uint64_t capacity_ = 0;
  bool floating_ = false;
  std::uint64_t nodes_ = 0;
  SearchOutcome outcome_ = SearchOutcome::kLimit;  // kLimit while running
  bool over_memory_ = false;

  // The static order (Item::rank), changed per group by RankGroup; the
  // trail restores it when a split fails.
  std::vector<std::uint32_t> rank_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> rank_trail_;  // (item, old rank)
  std::vector<std::uint64_t> total_;  // scratch for RankGroup, per item
  std::vector<std::uint32_t> group_scratch_, rank_scratch_;

  std::vector<std::uint64_t> am_;   // skyline offset, per item
  std::vector<std::uint64_t> offset_;
  std::vector<std::uint8_t> placed_;
  std::vector<std::uint32_t> cut_;  // unplaced items crossing boundary k
  std::vector<std::uint64_t> rem_;  // unplaced bytes per section
  std::vector<std::uint64_t> blocked_;  // the level a section is blocked at, or UINT64_MAX
  // Highest top of the placed items per section (base when none; obstacles
  // not counted), trailed; maintained when floors_.
  bool floors_ = false;
  std::vector<std::uint64_t> floor_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> floor_trail_;
  bool tiling_ = false;  // options_.tiling and the instance allows it
  std::vector<std::uint32_t> start_head_, start_next_;  // scratch: candidates by first section
  std::vector<std::uint8_t> reach_;                     // scratch: per section boundary
  std::vector<std::uint64_t> tiling_floors_;            // scratch
  std::vector<std::pair<std::uint64_t, std::uint32_t>> tiling_cands_;  // scratch
  std::size_t active_blocks_ = 0;
  MaxAddTree remaining_;                // rem_ as a range-max tree
  std::vector<std::uint32_t> pool_, pos_;
  std::vector<Comp> comps_;
  // Skyline offsets changed (item, old value), in two arrays: 12 bytes an
  // entry (busy traces change thousands per placement).
  std::vector<std::uint32_t> am_trail_;
  std::vector<std::uint64_t> am_old_;
  std::vector<Step> steps_;
  std::vector<Frame> frames_;
  // scratch per section (ReleasesFit: least or highest releases, or sums)
  std::vector<std::uint64_t> section_scratch_;
  std::vector<std::uint32_t> tight_count_;  // scratch per section + 1 (ReleasesFit)
  std::vector<std::pair<std::uint64_t, std::uint32_t>> releases_;  // scratch
  // ReleasesFit's per-section sums on long spans: a range adds to its
  // leaves, Max is the largest leaf.
  class SumTree {
   public:
    void Reset(std::uint32_t leaves);
    void Add(std::uint32_t lo, std::uint32_t hi, std::uint64_t v);  // [lo, hi)
    std::uint64_t Max() const { return mx_[1]; }

   private:
    std::uint32_t leaves_ = 0;
    std::vector<std::uint64_t> mx_, add_;
  };
  SumTree sums_;
  // Hole inference runs (option on, the instance's per-section obstacle
  // ranges built); the least item bytes per section (scratch).
  bool holes_ = false;
  std::vector<std::uint64_t> min_scratch_;
  // Failed component states of this run (nogoods): a component depends only
  // on its items, their skyline offsets, the level and the level's blocks
  // and rank bound, so the same state fails again wherever it recurs.
  std::vector<std::vector<std::uint64_t>> keys_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> failed_;
  std::size_t key_words_ = 0;
  std::vector<std::uint64_t> key_scratch_;
};

}  // namespace tensormem::solver
