// SPDX-License-Identifier: Apache-2.0
// greedy_by_size (objects), TFLite GPU's GreedyBySizeDistPriorityAssignment.
// Each tensor's position is the last rank whose positional maximum is >= its
// size. A tensor's distance to an object is the smallest gap (in tasks)
// between it and a tensor on the object, or "none" when one of them conflicts
// with it; its best object is the one at the smallest distance. Repeatedly
// the unplaced tensor with the best (position ascending, best distance
// ascending, size descending, index ascending) is put on its best object (a
// new object when it has none), and every other tensor's distances follow.
// Tie-breaks of the best object are TFLite's: a tensor keeps its best object
// until another one is strictly closer; when its best object becomes
// conflicting it picks the closest again, lowest id on a tie.
//
// Reference: the literal transcription, O(n^2) time and O(n x objects)
// memory (a distance per tensor per object); limited to kReferenceMaxRecords.
// Default: identical choices from an event-driven version. Only the tensors
// of the lowest unplaced position compete; they are kept up to date. After
// tensor b is put on object o, the only competing tensors whose state
// changes are (1) those that conflict with b and had o as their best object
// (a recalculation: two searches in segment trees over the placed tensors'
// free stretches, see FindNearest) and (2) those for which b is strictly
// closer than their best distance and that do not conflict with o, found in
// two segment trees over the competing tensors, keyed by first_task - best
// distance (tensors after b) and last_task + best distance (tensors before
// b), walked only into subtrees that hold a hit; the next tensor comes from
// an indexed binary heap. The waiting tensors (later positions) keep their
// state of an earlier step: their state at any later time follows from it
// and the placed tensors alone (see CheckWaiting), so the placements that
// only bring them closer are skipped (three quarters of all improvements
// on gpt2_medium_generate), and only the conflicts that may hit their best
// object are checked, each with a search. Conflicts come from an
// IntervalIndex over the unplaced tensors. Cost: O((n + changes + overlaps)
// log n), where changes (improved competing tensors) grow quadratically when
// each placement brings most of them closer. When a quarter of the tensors
// are live at once it would do more work than the transcription, which then
// runs instead if its table fits; otherwise, on inputs where most tensors
// overlap most others, it gives up with an error after kMaxWork units
// (work_budget.h).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "core/positional_maximums.h"
#include "core/sort_until.h"
#include "planning/interval_index.h"
#include "planning/objects/objects_strategies.h"
#include "planning/objects/work_budget.h"
#include "tensormem/lower_bounds.h"

namespace tensormem::planning {
namespace {

constexpr std::size_t kReferenceMaxRecords = 20'000;
// The reference keeps a distance per tensor per object: 25M of them is 200 MB.
constexpr std::size_t kReferenceMaxDistances = 25'000'000;
constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
// Default path: units of work (tensors visited by a query, recalculations,
// the ties a recalculation reads) before giving up, for the default time
// limit of 10 s; a caller who allows more time gets proportionally more
// (MaxWork).
constexpr std::uint64_t kMaxWork = 400'000'000;
// What a competing tensor whose best improves costs, in the units above (a
// sift in the heap and two segment-tree updates), and a search for a
// tensor's nearest objects (FindNearest: two segment-tree searches), about
// what they take against a visited tensor on gpt2_medium_generate (336,250
// tensors; the placements bring about 80 M competing tensors closer and need
// 9.6 M searches: about 1.25e9 units in all). So at the default limit
// greedy_by_size gives up there after a third of its run, no later than it
// did when every tensor was kept up to date, and objects best, which runs
// greedy_by_size first, keeps time for the others within its 10 s.
constexpr std::uint64_t kImprovedCost = 12;
constexpr std::uint64_t kSearchCost = 18;
// kMaxWork x (time limit / 10 s), between 1x and 10x: a longer time limit
// lets inputs finish that need more work (gpt2_medium_generate needs about
// 1.25e9 units: --time-limit 32 allows 1.28e9). No time limit (0 or
// infinite) keeps kMaxWork, the cap that stops a runaway input.
std::uint64_t MaxWork(const PlanParams& params) {
  const double t = params.time_limit_seconds;
  if (!(t > 10.0) || !std::isfinite(t)) return kMaxWork;
  return static_cast<std::uint64_t>(static_cast<double>(kMaxWork) * std::min(t / 10.0, 10.0));
}

// Beyond every task (tasks and gaps stay within 2^62) and within the
// search trees' neutral values (the int64 extremes): a free stretch open at
// one end, and "no best distance".
constexpr std::int64_t kOpen = kMaxTaskIndex + 1;

// position = last rank whose positional maximum is >= size.
Result<std::vector<std::size_t>> Positions(std::span<const UsageRecord> records,
                                           std::span<const std::uint64_t> maxima) {
  std::vector<std::size_t> positions(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto pos = static_cast<std::size_t>(
        std::partition_point(maxima.begin(), maxima.end(),
                             [&](std::uint64_t m) { return m >= records[i].size; }) -
        maxima.begin());
    if (pos == 0)
      return Internal("greedy_by_size: tensor " + std::to_string(i) +
                      " is larger than every positional maximum");
    positions[i] = pos - 1;
  }
  return positions;
}

// Gap between two lifetimes, kNone when they overlap.
std::uint64_t Distance(const UsageRecord& a, const UsageRecord& b) {
  if (a.last_task < b.first_task) return static_cast<std::uint64_t>(b.first_task - a.last_task);
  if (b.last_task < a.first_task) return static_cast<std::uint64_t>(a.first_task - b.last_task);
  return kNone;
}

// ---------------------------------------------------------------- reference

struct PriorityInfo {
  std::size_t position = 0;
  std::uint64_t size = 0;
  std::uint64_t best_dist = kNone;
  std::size_t best_object = kNone;
  std::vector<std::uint64_t> dist;  // per object

  bool HigherThan(const PriorityInfo& o) const {
    return position < o.position ||
           (position == o.position &&
            (best_dist < o.best_dist || (best_dist == o.best_dist && size > o.size)));
  }
  void RecalcBestDist() {
    best_dist = kNone;
    for (std::size_t object = 0; object < dist.size(); ++object)
      if (dist[object] < best_dist) {
        best_dist = dist[object];
        best_object = object;
      }
  }
};

Result<ObjectsPlan> Reference(std::span<const UsageRecord> records,
                              const std::vector<std::size_t>& positions,
                              internal::Deadline* deadline) {
  const std::size_t n = records.size();
  // Each step scans every tensor; no cap but the time limit (n is bounded).
  WorkBudget budget(std::numeric_limits<std::uint64_t>::max(), deadline);
  std::vector<PriorityInfo> info(n);
  for (std::size_t i = 0; i < n; ++i) {
    info[i].position = positions[i];
    info[i].size = records[i].size;
  }
  ObjectsPlan plan;
  std::vector<char> placed(n, 0);
  plan.object_of.assign(n, 0);
  for (std::size_t step = 0; step < n; ++step) {
    budget.Spend(n);
    if (budget.Exhausted()) return budget.Error("greedy_by_size", n);
    std::size_t b = n;
    for (std::size_t i = 0; i < n; ++i)
      if (!placed[i] && (b == n || info[i].HigherThan(info[b]))) b = i;
    std::size_t object = info[b].best_object;
    const bool new_object = info[b].best_dist == kNone;
    if (new_object) {
      object = plan.object_sizes.size();
      if ((object + 1) * n > kReferenceMaxDistances)
        return ResourceExhausted("greedy_by_size reference path: " + std::to_string(n) +
                                 " tensors x " + std::to_string(object + 1) +
                                 " objects exceed its table of " +
                                 std::to_string(kReferenceMaxDistances) +
                                 " distances (use the default path)");
      plan.object_sizes.push_back(records[b].size);
    } else {
      plan.object_sizes[object] = std::max(plan.object_sizes[object], records[b].size);
    }
    plan.object_of[b] = object;
    placed[b] = 1;
    for (std::size_t i = 0; i < n; ++i) {
      if (placed[i]) continue;
      PriorityInfo& p = info[i];
      if (!new_object && p.dist[object] == kNone) continue;
      const std::uint64_t d = Distance(records[i], records[b]);
      if (new_object) {
        p.dist.push_back(d);
      } else if (d == kNone) {
        p.dist[object] = kNone;
        if (p.best_object == object) p.RecalcBestDist();
      } else {
        p.dist[object] = std::min(p.dist[object], d);
      }
      if (d < p.best_dist) {
        p.best_dist = d;
        p.best_object = object;
      }
    }
  }
  return plan;
}

// ---------------------------------------------------------------- default

// Segment tree over fixed slots holding a signed 64-bit key per slot
// (absent slots hold a neutral value); ForEach reports the slots in
// [lo, hi) whose key passes `bound`, descending only where a subtree's
// min (or max) can pass.
class KeyTree {
 public:
  using Key = std::int64_t;
  KeyTree(std::size_t n, bool keep_min) : keep_min_(keep_min) {
    while (leaves_ < std::max<std::size_t>(n, 1)) leaves_ *= 2;
    tree_.assign(2 * leaves_, Neutral());
  }
  void Set(std::size_t slot, Key key) {
    std::size_t node = leaves_ + slot;
    tree_[node] = key;
    for (node /= 2; node >= 1; node /= 2) {
      const Key better = Better(tree_[2 * node], tree_[2 * node + 1]);
      if (tree_[node] == better) break;
      tree_[node] = better;
    }
  }
  void Clear(std::size_t slot) { Set(slot, Neutral()); }
  // visit(slot) for slots in [lo, hi) with key < bound (min tree) or
  // key > bound (max tree).
  template <typename Visit>
  void ForEach(std::size_t lo, std::size_t hi, Key bound, Visit&& visit) const {
    if (lo < hi) Walk(1, 0, leaves_, lo, hi, bound, visit);
  }
  // The lowest (First) or highest (Last) slot in [lo, hi) whose key passes
  // `bound`; kNone when there is none. Bottom-up from the range's near end
  // (AtCoder Library's max_right / min_left): up while the subtrees on the
  // far side hold no hit, then down to the nearest hit, O(log n) without
  // the recursion's backtracking.
  std::size_t First(std::size_t lo, std::size_t hi, Key bound) const {
    if (lo >= hi) return kNone;
    std::size_t node = lo + leaves_;
    do {
      while (node % 2 == 0) node /= 2;
      if (Passes(tree_[node], bound)) {
        while (node < leaves_) {
          node *= 2;
          if (!Passes(tree_[node], bound)) ++node;
        }
        return node - leaves_ < hi ? node - leaves_ : kNone;
      }
      ++node;
    } while ((node & (~node + 1)) != node);  // until node is a power of two
    return kNone;
  }
  std::size_t Last(std::size_t lo, std::size_t hi, Key bound) const {
    if (lo >= hi) return kNone;
    std::size_t node = hi + leaves_;
    do {
      --node;
      while (node > 1 && node % 2 == 1) node /= 2;
      if (Passes(tree_[node], bound)) {
        while (node < leaves_) {
          node = 2 * node + 1;
          if (!Passes(tree_[node], bound)) --node;
        }
        return node - leaves_ >= lo ? node - leaves_ : kNone;
      }
    } while ((node & (~node + 1)) != node);
    return kNone;
  }

 private:
  // Keys stay within +-(2^62 + 1) (kOpen); these are beyond every real one.
  Key Neutral() const {
    return keep_min_ ? std::numeric_limits<Key>::max() : std::numeric_limits<Key>::min();
  }
  Key Better(Key a, Key b) const { return keep_min_ ? std::min(a, b) : std::max(a, b); }
  bool Passes(Key key, Key bound) const { return keep_min_ ? key < bound : key > bound; }
  template <typename Visit>
  void Walk(std::size_t node, std::size_t l, std::size_t r, std::size_t lo, std::size_t hi,
            Key bound, Visit& visit) const {
    if (r <= lo || hi <= l || !Passes(tree_[node], bound)) return;
    if (node >= leaves_) {
      visit(node - leaves_);
      return;
    }
    const std::size_t m = l + (r - l) / 2;
    Walk(2 * node, l, m, lo, hi, bound, visit);
    Walk(2 * node + 1, m, r, lo, hi, bound, visit);
  }

  bool keep_min_;
  std::size_t leaves_ = 1;
  std::vector<Key> tree_;
};

class FastGreedyBySize {
  WorkBudget budget_;  // first: the constructor's own work counts
  // The free stretch of an object around a tensor placed on it: the last
  // task of its predecessor there and the first task of its successor (the
  // type's extremes when there is none), and the two tensors (kNone when
  // there is none).
  struct Stretch {
    TaskIndex prev_end, next_start;
    std::size_t prev, next;
  };

 public:
  // deadline: the call's, started before the positional maximums.
  FastGreedyBySize(std::span<const UsageRecord> records, const std::vector<std::size_t>& positions,
                   const PlanParams& params, internal::Deadline* deadline)
      : budget_(MaxWork(params), deadline),
        r_(records),
        n_(records.size()),
        position_(positions),
        best_dist_(n_, kNone),
        best_object_(n_, kNone),
        object_of_(n_, 0),
        unplaced_(Firsts(), Lasts()),
        after_(n_, /*keep_min=*/true),
        before_(n_, /*keep_min=*/false),
        free_until_(n_, /*keep_min=*/false),
        free_since_(n_, /*keep_min=*/true) {
    heap_index_.assign(n_, kNone);
    // (task, index) pairs sort in memory order; under the deadline, which
    // the sorts of 10^6 tensors would otherwise overrun. Records arrive in
    // task order, so the first sort is a pass over sorted runs.
    by_first_ = RanksBy([&](std::size_t i) { return r_[i].first_task; });
    if (stopped_) return;
    by_last_ = RanksBy([&](std::size_t i) { return r_[i].last_task; });
    if (stopped_) return;
    IndexRanks();
    GroupByPosition();
    FindRankRanges();
  }

  Result<ObjectsPlan> Run() {
    if (stopped_) return budget_.Error("greedy_by_size", n_);
    ObjectsPlan plan;
    plan.object_of.assign(n_, 0);
    for (std::size_t step = 0; step < n_; ++step) {
      if (budget_.Exhausted()) return OutOfBudget();
      const std::size_t b = Next();
      if (!consistent_)
        return Internal("greedy_by_size: a waiting tensor's best distance grew without a "
                        "recalculation");
      const bool new_object = best_dist_[b] == kNone;
      const std::size_t object = TakeObject(b, plan);
      const Stretch stretch = Place(b, object, step);
      if (!new_object) UpdateConflicting(b, object, stretch);
      UpdateImproved(b, object, stretch);
    }
    return plan;
  }

 private:
  // The tasks by rank, and each tensor's slot in the two rank orders.
  void IndexRanks() {
    first_by_rank_.resize(n_);
    last_by_rank_.resize(n_);
    for (std::size_t k = 0; k < n_; ++k) {
      first_by_rank_[k] = r_[by_first_[k]].first_task;
      last_by_rank_[k] = r_[by_last_[k]].last_task;
    }
    slot_after_.resize(n_);
    slot_before_.resize(n_);
    for (std::size_t k = 0; k < n_; ++k) {
      slot_after_[by_first_[k]] = k;
      slot_before_[by_last_[k]] = k;
    }
  }

  void GroupByPosition() {
    for (std::size_t i = 0; i < n_; ++i) {
      if (position_[i] >= groups_.size()) groups_.resize(position_[i] + 1);
      groups_[position_[i]].push_back(i);
      unplaced_.Insert(i);
    }
    placed_at_.assign(n_, 0);
  }

  // Per tensor, the rank ranges FindNearest searches, and per rank where
  // its run of equal tasks begins (ends): fixed, so found once here.
  void FindRankRanges() {
    ends_before_.resize(n_);
    starts_after_.resize(n_);
    for (std::size_t i = 0; i < n_; ++i) {
      ends_before_[i] = LastRankAbove(r_[i].first_task - 1);
      starts_after_[i] = FirstRankAbove(r_[i].last_task);
    }
    last_run_begin_.resize(n_);
    first_run_end_.resize(n_);
    for (std::size_t k = 0; k < n_; ++k) {
      const bool tied = k > 0 && last_by_rank_[k - 1] == last_by_rank_[k];
      last_run_begin_[k] = tied ? last_run_begin_[k - 1] : k;
    }
    for (std::size_t k = n_; k-- > 0;) {
      const bool tied = k + 1 < n_ && first_by_rank_[k + 1] == first_by_rank_[k];
      first_run_end_[k] = tied ? first_run_end_[k + 1] : k + 1;
    }
  }

  Status OutOfBudget() {
    Status error = budget_.Error("greedy_by_size", n_);
    if (error.code() != StatusCode::kResourceExhausted) return error;
    return ResourceExhausted(error.message() +
                             "; a time limit above 10 s allows proportionally more steps, "
                             "up to 10x");
  }

  // The object b goes on: its best (which grows to b's size), or a new one.
  std::size_t TakeObject(std::size_t b, ObjectsPlan& plan) {
    std::size_t object = best_object_[b];
    if (best_dist_[b] == kNone) {
      object = plan.object_sizes.size();
      plan.object_sizes.push_back(r_[b].size);
      tensors_on_.emplace_back();
    } else {
      plan.object_sizes[object] = std::max(plan.object_sizes[object], r_[b].size);
    }
    plan.object_of[b] = object;
    return object;
  }

  // (1) Tensors that conflict with b and had `object` as their best:
  // competing ones by their state, waiting ones by CheckWaiting.
  void UpdateConflicting(std::size_t b, std::size_t object, const Stretch& stretch) {
    const UsageRecord& rb = r_[b];
    recalc_.clear();
    waiting_.clear();
    unplaced_.ForEachOverlapping(rb.first_task, rb.last_task, [&](std::size_t i) {
      budget_.Spend(1);
      if (!Queued(i)) {
        waiting_.push_back(i);
      } else if (best_dist_[i] != kNone && best_object_[i] == object) {
        recalc_.push_back(i);
      }
    });
    for (std::size_t i : recalc_) Recalculate(i);
    budget_.Spend(recalc_.size());
    recalculated_ = 0;
    for (std::size_t i : waiting_) CheckWaiting(i, object, stretch);
    budget_.Spend(recalculated_);
  }

  // (2) Tensors for which b is strictly closer than their best and that
  // fit in the free stretch of `object` around b: (prev_end, next_start).
  void UpdateImproved(std::size_t b, std::size_t object, const Stretch& stretch) {
    // (Not a structured binding: the lambdas below capture these, which
    // clang before 16 refuses.)
    const TaskIndex prev_end = stretch.prev_end, next_start = stretch.next_start;
    const UsageRecord& rb = r_[b];
    improved_.clear();
    after_.ForEach(FirstRankAbove(rb.last_task), FirstRankAbove(next_start - 1), rb.last_task,
                   [&](std::size_t slot) {
                     const std::size_t i = by_first_[slot];
                     if (r_[i].last_task < next_start) improved_.push_back(i);
                   });
    before_.ForEach(LastRankAbove(prev_end), LastRankAbove(rb.first_task - 1), rb.first_task,
                    [&](std::size_t slot) {
                      const std::size_t i = by_last_[slot];
                      if (r_[i].first_task > prev_end) improved_.push_back(i);
                    });
    budget_.Spend(kImprovedCost * improved_.size());
    for (std::size_t i : improved_) SetBest(i, Distance(r_[i], rb), object);
  }

  std::vector<TaskIndex> Firsts() const {
    std::vector<TaskIndex> v(n_);
    for (std::size_t i = 0; i < n_; ++i) v[i] = r_[i].first_task;
    return v;
  }
  std::vector<TaskIndex> Lasts() const {
    std::vector<TaskIndex> v(n_);
    for (std::size_t i = 0; i < n_; ++i) v[i] = r_[i].last_task;
    return v;
  }
  // Ranks (in first-task / last-task order) of the first tensor whose first
  // (last) task is > t.
  std::size_t FirstRankAbove(TaskIndex t) const {
    return static_cast<std::size_t>(
        std::upper_bound(first_by_rank_.begin(), first_by_rank_.end(), t) - first_by_rank_.begin());
  }
  std::size_t LastRankAbove(TaskIndex t) const {
    return static_cast<std::size_t>(
        std::upper_bound(last_by_rank_.begin(), last_by_rank_.end(), t) - last_by_rank_.begin());
  }

  // The position is fixed, so only the tensors of the lowest position still
  // unplaced compete; they sit in a binary heap by (best distance, larger
  // size, index), built when their position's turn comes, each tensor's
  // place in it indexed so a changed distance sifts it in O(log n) (an
  // ordered set's erase and insert were a quarter of the time on
  // gpt2_medium_generate).
  bool Before(std::size_t i, std::size_t j) const {
    if (best_dist_[i] != best_dist_[j]) return best_dist_[i] < best_dist_[j];
    if (r_[i].size != r_[j].size) return r_[i].size > r_[j].size;
    return i < j;
  }
  void SiftUp(std::size_t k) {
    const std::size_t i = heap_[k];
    while (k > 0 && Before(i, heap_[(k - 1) / 2])) {
      heap_[k] = heap_[(k - 1) / 2];
      heap_index_[heap_[k]] = k;
      k = (k - 1) / 2;
    }
    heap_[k] = i;
    heap_index_[i] = k;
  }
  void SiftDown(std::size_t k) {
    const std::size_t i = heap_[k];
    for (;;) {
      std::size_t c = 2 * k + 1;
      if (c >= heap_.size()) break;
      if (c + 1 < heap_.size() && Before(heap_[c + 1], heap_[c])) ++c;
      if (!Before(heap_[c], i)) break;
      heap_[k] = heap_[c];
      heap_index_[heap_[k]] = k;
      k = c;
    }
    heap_[k] = i;
    heap_index_[i] = k;
  }
  void Unqueue(std::size_t i) {
    const std::size_t k = heap_index_[i];
    const std::size_t last = heap_.back();
    heap_.pop_back();
    if (last == i) return;
    heap_[k] = last;
    heap_index_[last] = k;
    SiftUp(k);
    SiftDown(heap_index_[last]);
  }
  bool Queued(std::size_t i) const { return position_[i] == active_; }
  std::size_t Next() {
    while (heap_.empty()) {
      active_ = started_ ? active_ + 1 : 0;
      started_ = true;
      heap_ = groups_[active_];
      for (std::size_t i : heap_) Activate(i);
      for (std::size_t k = 0; k < heap_.size(); ++k) heap_index_[heap_[k]] = k;
      for (std::size_t k = heap_.size() / 2; k-- > 0;) SiftDown(k);
    }
    return heap_.front();
  }

  // A tensor after b improves when first - best < b.last; one before b when
  // last + best > b.first. "No best" is farther than any gap.
  void UpdateTrees(std::size_t i) {
    // kOpen as "no best" passes every bound; the sum saturates there (it
    // passes every bound from 2^62 + 1 on, as the true sum would).
    const std::int64_t best =
        best_dist_[i] == kNone ? kOpen : static_cast<std::int64_t>(best_dist_[i]);
    const TaskIndex first = r_[i].first_task, last = r_[i].last_task;
    after_.Set(slot_after_[i], first - best);
    before_.Set(slot_before_[i], best >= kOpen - last ? kOpen : last + best);
  }
  void SetBestDist(std::size_t i, std::uint64_t dist) {
    if (dist == best_dist_[i]) return;
    const bool closer = dist < best_dist_[i];
    best_dist_[i] = dist;
    if (Queued(i)) {
      if (closer) SiftUp(heap_index_[i]);
      else SiftDown(heap_index_[i]);
    }
    UpdateTrees(i);
  }
  void SetBest(std::size_t i, std::uint64_t dist, std::size_t object) {
    SetBestDist(i, dist);
    best_object_[i] = object;
  }
  // Puts b on `object` at placement `step`; returns the free stretch of the
  // object around b (Stretch).
  Stretch Place(std::size_t b, std::size_t object, std::size_t step) {
    placed_at_[b] = step;
    Unqueue(b);
    unplaced_.Erase(b);
    after_.Clear(slot_after_[b]);
    before_.Clear(slot_before_[b]);
    // An object's tensors never overlap, so their first tasks order them.
    std::vector<std::size_t>& on = tensors_on_[object];
    const auto at = static_cast<std::size_t>(
        std::lower_bound(on.begin(), on.end(), r_[b].first_task,
                         [&](std::size_t t, TaskIndex x) { return r_[t].first_task < x; }) -
        on.begin());
    on.insert(on.begin() + static_cast<std::ptrdiff_t>(at), b);
    // The free stretches around b on its object: before b, from its
    // predecessor's end until b starts; after b, until its successor starts.
    const std::size_t prev = at == 0 ? kNone : on[at - 1];
    const std::size_t next = at + 1 == on.size() ? kNone : on[at + 1];
    free_until_.Set(slot_before_[b], next == kNone ? kOpen : r_[next].first_task);
    free_since_.Set(slot_after_[b], prev == kNone ? -kOpen : r_[prev].last_task);
    if (prev != kNone) free_until_.Set(slot_before_[prev], r_[b].first_task);
    if (next != kNone) free_since_.Set(slot_after_[next], r_[b].last_task);
    object_of_[b] = object;
    return {prev == kNone ? std::numeric_limits<TaskIndex>::min() : r_[prev].last_task,
            next == kNone ? std::numeric_limits<TaskIndex>::max() : r_[next].first_task, prev,
            next};
  }
  // The nearest objects that do not conflict with i, from the placed
  // tensors alone. An object does not conflict with i exactly when one of
  // its free stretches holds all of i: then its distance is the gap to the
  // stretch's ends. So the nearest object ending before i is the placed
  // tensor t with the latest last task before i's first whose successor on
  // its object starts after i's last (free_until_, by last-task rank), and
  // the nearest starting after i mirrors it (free_since_, by first-task
  // rank): two searches of O(log n), plus the tensors that tie with the
  // nearest (equal last, or equal first, task). An object has at most one
  // such tensor on each side, so a side reports each object once. Of the
  // tied objects it returns the lowest id (TFLite's choice when it
  // recalculates) and the one whose tensor at that distance was placed
  // first (the one that became the best, see CheckWaiting).
  struct Nearest {
    std::uint64_t dist = kNone;
    std::size_t lowest_object = kNone;
    std::size_t first_object = kNone;
    std::size_t first_step = kNone;
  };
  Nearest FindNearest(std::size_t i) {
    const UsageRecord& ri = r_[i];
    Nearest near;
    std::uint64_t cost = kSearchCost;
    auto consider = [&](std::uint64_t gap, std::size_t tensor) {
      ++cost;
      near.dist = gap;
      near.lowest_object = std::min(near.lowest_object, object_of_[tensor]);
      if (placed_at_[tensor] < near.first_step) {
        near.first_step = placed_at_[tensor];
        near.first_object = object_of_[tensor];
      }
    };
    // Before i: ranks in by_last_ of the tensors that end before i starts;
    // after i: ranks in by_first_ of the tensors that start after i ends.
    const std::size_t nearest_before = free_until_.Last(0, ends_before_[i], ri.last_task);
    const std::size_t nearest_after = free_since_.First(starts_after_[i], n_, ri.first_task);
    std::uint64_t gap_before = kNone, gap_after = kNone;
    if (nearest_before != kNone)
      gap_before = static_cast<std::uint64_t>(ri.first_task - last_by_rank_[nearest_before]);
    if (nearest_after != kNone)
      gap_after = static_cast<std::uint64_t>(first_by_rank_[nearest_after] - ri.last_task);
    // (A run of one, the usual case, is the nearest itself.)
    if (gap_before != kNone && gap_before <= gap_after) {
      const std::size_t tied = last_run_begin_[nearest_before];
      if (tied == nearest_before)
        consider(gap_before, by_last_[nearest_before]);
      else
        free_until_.ForEach(tied, nearest_before + 1, ri.last_task,
                            [&](std::size_t rank) { consider(gap_before, by_last_[rank]); });
    }
    if (gap_after != kNone && gap_after <= gap_before) {
      const std::size_t tied_end = first_run_end_[nearest_after];
      if (tied_end == nearest_after + 1)
        consider(gap_after, by_first_[nearest_after]);
      else
        free_since_.ForEach(nearest_after, tied_end, ri.first_task,
                            [&](std::size_t rank) { consider(gap_after, by_first_[rank]); });
    }
    budget_.Spend(cost);
    return near;
  }
  // TFLite's RecalcBestDist: the closest non-conflicting object, lowest id
  // on a tie; keeps the stale best object when there is none.
  void Recalculate(std::size_t i) {
    const Nearest near = FindNearest(i);
    SetBestDist(i, near.dist);
    if (near.dist != kNone) best_object_[i] = near.lowest_object;
  }

  // Waiting tensors (positions after the competing one) are not kept up to
  // date: their best distance and object are what they were at some
  // earlier step (the start, their last recalculation, or the last check
  // below that searched), and the placements that only bring them closer
  // are skipped. That is enough to know their state at any later time:
  // distances only shrink until an object conflicts, so the best distance
  // is the nearest distance now (FindNearest), and the best object is the
  // stored one while that distance has not changed (only a strictly closer
  // object replaces it, and a recalculation would have been recorded), else
  // the object that first came that close (it replaced the best then, and
  // nothing strictly closer came since): CatchUp. Recalculations are what
  // cannot be skipped: one happens when a tensor that conflicts with i
  // lands on i's best object.
  //
  // b, conflicting with waiting tensor i, has just joined `object` in
  // `stretch`: recalculates i if `object` was its best just before (its
  // distance then, against the stored state and the nearest other
  // objects), else stores i's state now when it was worked out anyway, so
  // that the next check starts from a closer stored distance.
  void CheckWaiting(std::size_t i, std::size_t object, const Stretch& stretch) {
    const UsageRecord& ri = r_[i];
    // Conflicting with i already: not a candidate (and not the best, or it
    // would have been recalculated then).
    if (!(stretch.prev_end < ri.first_task && ri.last_task < stretch.next_start)) return;
    std::uint64_t gap_prev = kNone, gap_next = kNone;
    if (stretch.prev != kNone)
      gap_prev = static_cast<std::uint64_t>(ri.first_task - stretch.prev_end);
    if (stretch.next != kNone)
      gap_next = static_cast<std::uint64_t>(stretch.next_start - ri.last_task);
    const std::uint64_t dist = std::min(gap_prev, gap_next);
    const std::uint64_t stored = best_dist_[i];
    // Farther than the best then (at most the stored distance): not it.
    if (dist == kNone || dist > stored || (dist == stored && best_object_[i] != object)) return;
    // The nearest other objects (b now keeps `object` out): i's state now.
    const Nearest others = FindNearest(i);
    bool was_best;
    if (dist == stored) {
      was_best = others.dist >= stored;  // nothing came closer: still the stored best
    } else if (others.dist != dist) {
      was_best = others.dist > dist;
    } else {  // tied with others: the best is the object that came that close first
      std::size_t step = kNone;
      if (gap_prev == dist) step = placed_at_[stretch.prev];
      if (gap_next == dist) step = std::min(step, placed_at_[stretch.next]);
      was_best = step < others.first_step;
    }
    if (was_best) {  // TFLite's recalculation, as Recalculate (a stale object, where
                     // none is left, is never read: no best distance means a new object)
      best_dist_[i] = others.dist;
      if (others.dist != kNone) best_object_[i] = others.lowest_object;
      ++recalculated_;
    } else {  // the best then is still the best now
      CatchUp(i, others);
    }
  }
  // A waiting tensor's state now, from its stored state and `near`, the
  // nearest objects now (see above).
  void CatchUp(std::size_t i, const Nearest& near) {
    if (near.dist > best_dist_[i]) consistent_ = false;  // cannot happen: checked in Run
    if (near.dist != best_dist_[i]) {
      best_dist_[i] = near.dist;
      best_object_[i] = near.first_object;
    }
  }
  // A waiting tensor's position starts competing: its state now, then into
  // the trees.
  void Activate(std::size_t i) {
    CatchUp(i, FindNearest(i));
    UpdateTrees(i);
  }

  std::span<const UsageRecord> r_;
  std::size_t n_;
  const std::vector<std::size_t>& position_;
  std::vector<std::uint64_t> best_dist_;
  std::vector<std::size_t> best_object_;
  std::vector<std::size_t> object_of_;
  IntervalIndex unplaced_;
  KeyTree after_, before_;
  std::vector<std::size_t> by_first_, by_last_, slot_after_, slot_before_;
  // The first (last) task of by_first_[k] (by_last_[k]): rank searches read
  // these in order instead of chasing each record.
  std::vector<TaskIndex> first_by_rank_, last_by_rank_;
  std::vector<std::vector<std::size_t>> groups_;  // tensors by position
  std::size_t active_ = 0;
  bool started_ = false;
  std::vector<std::size_t> heap_;        // the competing tensors (see Next)
  std::vector<std::size_t> heap_index_;  // per tensor: its index in heap_ while there
  std::vector<std::vector<std::size_t>> tensors_on_;  // per object, in time order
  // Per placed tensor, the free stretches of its object next to it: by
  // last-task rank, where the stretch after it ends (its successor's first
  // task, kOpen when none); by first-task rank, where the stretch before it
  // begins (its predecessor's last task, -kOpen when none).
  KeyTree free_until_, free_since_;
  std::vector<std::size_t> recalc_, improved_, waiting_;
  std::vector<std::size_t> placed_at_;  // per placed tensor: its step
  std::size_t recalculated_ = 0;
  std::vector<std::size_t> ends_before_, starts_after_;     // per tensor (FindNearest)
  std::vector<std::size_t> last_run_begin_, first_run_end_;  // per rank (FindNearest)
  bool consistent_ = true;
  bool stopped_ = false;  // the deadline passed in the constructor

  // Tensor indices by task(i), ties by index; empty and stopped_ when the
  // deadline passes.
  template <typename Task>
  std::vector<std::size_t> RanksBy(Task task) {
    std::vector<std::pair<TaskIndex, std::size_t>> keyed(n_);
    for (std::size_t i = 0; i < n_; ++i) keyed[i] = {task(i), i};
    if (!internal::StableSortUntil(keyed, std::less<std::pair<TaskIndex, std::size_t>>(),
                                   budget_.deadline())) {
      stopped_ = true;
      return {};
    }
    std::vector<std::size_t> ranked(n_);
    for (std::size_t k = 0; k < n_; ++k) ranked[k] = keyed[k].second;
    return ranked;
  }
};

// Both entry points below, once the positional maximums are known.
Result<ObjectsPlan> PlanWithMaxima(std::span<const UsageRecord> records, const PlanParams& params,
                                   std::span<const std::uint64_t> maxima,
                                   internal::Deadline* deadline) {
  TM_ASSIGN_OR_RETURN(std::vector<std::size_t> positions, Positions(records, maxima));
  const std::size_t n = records.size();
  if (!params.reference) {
    // When a quarter of all tensors are live at once, the event-driven
    // version does more work than the transcription's n^2 scans; run the
    // transcription there if its table fits (same result either way).
    const std::size_t most_live = maxima.size();
    if (4 * most_live >= n && n * most_live <= kReferenceMaxDistances) {
      Result<ObjectsPlan> plan = Reference(records, positions, deadline);
      if (plan.ok() || plan.status().code() != StatusCode::kResourceExhausted) return plan;
    }
    return FastGreedyBySize(records, positions, params, deadline).Run();
  }
  if (n > kReferenceMaxRecords)
    return ResourceExhausted("greedy_by_size reference path is quadratic; " + std::to_string(n) +
                             " records exceed its limit of " +
                             std::to_string(kReferenceMaxRecords) + " (use the default path)");
  return Reference(records, positions, deadline);
}

}  // namespace

Result<ObjectsPlan> GreedyBySizeObjects(std::span<const UsageRecord> records,
                                        const PlanParams& params,
                                        std::span<const std::uint64_t> maxima) {
  internal::Deadline deadline(params.time_limit_seconds, params.should_stop);
  return PlanWithMaxima(records, params, maxima, &deadline);
}

Result<ObjectsPlan> GreedyBySizeObjects(std::span<const UsageRecord> records,
                                        const PlanParams& params) {
  // One deadline from here on: the positional maximums take about a second
  // at 10^6 records.
  internal::Deadline deadline(params.time_limit_seconds, params.should_stop);
  std::vector<std::uint64_t> maxima;
  if (!internal::PositionalMaximumsUntil(records, &deadline, &maxima))
    return WorkBudget(0, &deadline).Error("greedy_by_size", records.size());
  TM_ASSIGN_OR_RETURN(ObjectsPlan plan, PlanWithMaxima(records, params, maxima, &deadline));
  // The maximums are the report's bound too: the dispatcher need not
  // compute them again.
  plan.lower_bound = internal::SumOfMaximums(maxima);
  return plan;
}

}  // namespace tensormem::planning
