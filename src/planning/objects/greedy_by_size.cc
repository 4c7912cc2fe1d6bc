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
// Default: identical choices from an event-driven version. After tensor b is
// put on object o, the only tensors whose state changes are (1) those that
// conflict with b and had o as their best object (a recalculation: walk the
// placed tensors outwards from the tensor's lifetime, nearest first, skipping
// objects that conflict with it) and (2) those for which b is strictly closer
// than their best distance and that do not conflict with o. Group (1) comes
// from an IntervalIndex over the unplaced tensors; group (2) from two
// segment trees over the unplaced tensors, keyed by first_task - best
// distance (tensors after b) and last_task + best distance (tensors before
// b), walked only into subtrees that hold a hit. The next tensor comes from
// an ordered set; only the tensors of the lowest unplaced position compete,
// so only they are kept there. Cost: O((n + changes + overlaps) log n) on
// real networks. When a quarter of the tensors are live at once it would do
// more work than the transcription, which then runs instead if its table
// fits; otherwise, on inputs where most tensors overlap most others, it
// gives up with an error after kMaxWork steps (work_budget.h).
#include <algorithm>
#include <bit>
#include <limits>
#include <set>
#include <string>
#include <tuple>

#include "core/checked_math.h"
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
// Default path: units of work (tensors visited by a query, placed tensors
// walked, objects asked) before giving up, about 10 s.
constexpr std::uint64_t kMaxWork = 400'000'000;
// What a tensor whose best improves costs, in the units above: a move in the
// queue and two segment-tree updates, about 100 ns on this machine, where
// the budget's 4e8 units are meant to last 10-15 s (25-40 ns each). Counted
// as one, 20,000 tensors with disjoint lifetimes (every placement improves
// every later tensor) ran 29 s within the budget.
constexpr std::uint64_t kImprovedCost = 4;

// position = last rank whose positional maximum is >= size.
Result<std::vector<std::size_t>> Positions(std::span<const UsageRecord> records) {
  const std::vector<std::uint64_t> maxima = PositionalMaximums(records);
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
                              const std::vector<std::size_t>& positions) {
  const std::size_t n = records.size();
  std::vector<PriorityInfo> info(n);
  for (std::size_t i = 0; i < n; ++i) {
    info[i].position = positions[i];
    info[i].size = records[i].size;
  }
  ObjectsPlan plan;
  std::vector<char> placed(n, 0);
  plan.object_of.assign(n, 0);
  for (std::size_t step = 0; step < n; ++step) {
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

// Segment tree over fixed slots holding a signed 128-bit key per slot
// (absent slots hold a neutral value); ForEach reports the slots in
// [lo, hi) whose key passes `bound`, descending only where a subtree's
// min (or max) can pass.
class KeyTree {
 public:
  using Key = internal::Int128;
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

 private:
  // Keys stay within +-2^66; these are beyond every real one.
  static constexpr Key kFar = Key{1} << 100;
  Key Neutral() const { return keep_min_ ? kFar : -kFar; }
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

 public:
  FastGreedyBySize(std::span<const UsageRecord> records, const std::vector<std::size_t>& positions,
                   const PlanParams& params)
      : budget_(kMaxWork, &params),
        r_(records),
        n_(records.size()),
        position_(positions),
        best_dist_(n_, kNone),
        best_object_(n_, kNone),
        object_of_(n_, 0),
        unplaced_(Firsts(), Lasts()),
        after_(n_, /*keep_min=*/true),
        before_(n_, /*keep_min=*/false) {
    placed_by_last_.assign((n_ + 63) / 64, 0);
    placed_by_first_.assign((n_ + 63) / 64, 0);
    prev_on_object_.assign(n_, kNone);
    next_on_object_.assign(n_, kNone);
    by_first_.resize(n_);
    by_last_.resize(n_);
    for (std::size_t i = 0; i < n_; ++i) by_first_[i] = by_last_[i] = i;
    std::stable_sort(by_first_.begin(), by_first_.end(),
                     [&](std::size_t a, std::size_t b) { return r_[a].first_task < r_[b].first_task; });
    std::stable_sort(by_last_.begin(), by_last_.end(),
                     [&](std::size_t a, std::size_t b) { return r_[a].last_task < r_[b].last_task; });
    slot_after_.resize(n_);
    slot_before_.resize(n_);
    for (std::size_t k = 0; k < n_; ++k) {
      slot_after_[by_first_[k]] = k;
      slot_before_[by_last_[k]] = k;
    }
    for (std::size_t i = 0; i < n_; ++i) {
      if (position_[i] >= groups_.size()) groups_.resize(position_[i] + 1);
      groups_[position_[i]].push_back(i);
      unplaced_.Insert(i);
      UpdateTrees(i);
    }
  }

  Result<ObjectsPlan> Run() {
    ObjectsPlan plan;
    plan.object_of.assign(n_, 0);
    for (std::size_t step = 0; step < n_; ++step) {
      if (budget_.Exhausted()) return budget_.Error("greedy_by_size", n_);
      const std::size_t b = Next();
      const bool new_object = best_dist_[b] == kNone;
      std::size_t object = best_object_[b];
      if (new_object) {
        object = plan.object_sizes.size();
        plan.object_sizes.push_back(r_[b].size);
        intervals_.emplace_back();
        tensors_on_.emplace_back();
      } else {
        plan.object_sizes[object] = std::max(plan.object_sizes[object], r_[b].size);
      }
      plan.object_of[b] = object;
      Place(b, object);
      const UsageRecord& rb = r_[b];
      // (1) Tensors that conflict with b and had `object` as their best.
      if (!new_object) {
        recalc_.clear();
        unplaced_.ForEachOverlapping(rb.first_task, rb.last_task, [&](std::size_t i) {
          budget_.Spend(1);
          if (best_dist_[i] != kNone && best_object_[i] == object) recalc_.push_back(i);
        });
        for (std::size_t i : recalc_) Recalculate(i);
        budget_.Spend(recalc_.size());
      }
      // (2) Tensors for which b is strictly closer than their best and that
      // fit in the free stretch of `object` around b: (prev_end, next_start).
      const Intervals& iv = intervals_[object];
      auto it = std::lower_bound(iv.begin(), iv.end(), std::pair{rb.first_task, rb.last_task});
      const TaskIndex next_start =
          std::next(it) == iv.end() ? std::numeric_limits<TaskIndex>::max() : std::next(it)->first;
      const TaskIndex prev_end =
          it == iv.begin() ? std::numeric_limits<TaskIndex>::min() : std::prev(it)->second;
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
    return plan;
  }

 private:
  using QueueEntry = std::tuple<std::uint64_t, std::uint64_t, std::size_t>;
  // An object's tensors' lifetimes, sorted (they never overlap): a sorted
  // vector, since Recalculate asks many objects in turn and a node set's
  // pointer chasing was most of its time.
  using Intervals = std::vector<std::pair<TaskIndex, TaskIndex>>;

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
        std::upper_bound(by_first_.begin(), by_first_.end(), t,
                         [&](TaskIndex x, std::size_t i) { return x < r_[i].first_task; }) -
        by_first_.begin());
  }
  std::size_t LastRankAbove(TaskIndex t) const {
    return static_cast<std::size_t>(
        std::upper_bound(by_last_.begin(), by_last_.end(), t,
                         [&](TaskIndex x, std::size_t i) { return x < r_[i].last_task; }) -
        by_last_.begin());
  }

  // The position is fixed, so only the tensors of the lowest position still
  // unplaced compete; they sit in an ordered set by (best distance, larger
  // size, index), built when their position's turn comes.
  QueueEntry QueueKey(std::size_t i) const {
    return {best_dist_[i], internal::kMaxU64 - r_[i].size, i};
  }
  bool Queued(std::size_t i) const { return position_[i] == active_; }
  std::size_t Next() {
    while (queue_.empty()) {
      active_ = started_ ? active_ + 1 : 0;
      started_ = true;
      for (std::size_t i : groups_[active_]) queue_.insert(QueueKey(i));
    }
    return std::get<2>(*queue_.begin());
  }

  // A tensor after b improves when first - best < b.last; one before b when
  // last + best > b.first. "No best" is farther than any gap.
  void UpdateTrees(std::size_t i) {
    using internal::Int128;
    const Int128 best = best_dist_[i] == kNone ? (Int128{1} << 64) : Int128{best_dist_[i]};
    after_.Set(slot_after_[i], Int128{r_[i].first_task} - best);
    before_.Set(slot_before_[i], Int128{r_[i].last_task} + best);
  }
  void SetBestDist(std::size_t i, std::uint64_t dist) {
    if (dist == best_dist_[i]) return;
    if (Queued(i)) queue_.erase(QueueKey(i));
    best_dist_[i] = dist;
    if (Queued(i)) queue_.insert(QueueKey(i));
    UpdateTrees(i);
  }
  void SetBest(std::size_t i, std::uint64_t dist, std::size_t object) {
    SetBestDist(i, dist);
    best_object_[i] = object;
  }
  void Place(std::size_t b, std::size_t object) {
    queue_.erase(QueueKey(b));
    unplaced_.Erase(b);
    after_.Clear(slot_after_[b]);
    before_.Clear(slot_before_[b]);
    Intervals& iv = intervals_[object];
    std::vector<std::size_t>& on = tensors_on_[object];
    const std::pair<TaskIndex, TaskIndex> lifetime{r_[b].first_task, r_[b].last_task};
    const auto at = static_cast<std::size_t>(
        std::lower_bound(iv.begin(), iv.end(), lifetime) - iv.begin());
    iv.insert(iv.begin() + static_cast<std::ptrdiff_t>(at), lifetime);
    on.insert(on.begin() + static_cast<std::ptrdiff_t>(at), b);
    // b's neighbours on its object in time, so that Recalculate's walk sees
    // whether an object conflicts in O(1).
    prev_on_object_[b] = at == 0 ? kNone : on[at - 1];
    next_on_object_[b] = at + 1 == on.size() ? kNone : on[at + 1];
    if (prev_on_object_[b] != kNone) next_on_object_[prev_on_object_[b]] = b;
    if (next_on_object_[b] != kNone) prev_on_object_[next_on_object_[b]] = b;
    placed_by_last_[slot_before_[b] / 64] |= std::uint64_t{1} << (slot_before_[b] % 64);
    placed_by_first_[slot_after_[b] / 64] |= std::uint64_t{1} << (slot_after_[b] % 64);
    object_of_[b] = object;
  }
  // Distance from r to the nearest tensor on `object`, kNone on a conflict.
  std::uint64_t GapToObject(std::size_t object, const UsageRecord& r) const {
    const Intervals& iv = intervals_[object];
    auto it = std::lower_bound(iv.begin(), iv.end(),
                               std::pair{r.first_task, std::numeric_limits<TaskIndex>::min()});
    std::uint64_t gap = kNone;
    if (it != iv.end()) {
      if (it->first <= r.last_task) return kNone;
      gap = static_cast<std::uint64_t>(it->first - r.last_task);
    }
    if (it != iv.begin()) {
      const auto prev = std::prev(it);
      if (prev->second >= r.first_task) return kNone;
      gap = std::min(gap, static_cast<std::uint64_t>(r.first_task - prev->second));
    }
    return gap;
  }
  // The highest set bit below `end`, kNone when there is none.
  static std::size_t PrevPlaced(const std::vector<std::uint64_t>& bits, std::size_t end) {
    if (end == 0) return kNone;
    std::size_t word = (end - 1) / 64;
    std::uint64_t w = bits[word] & (~std::uint64_t{0} >> (63 - (end - 1) % 64));
    while (w == 0) {
      if (word == 0) return kNone;
      w = bits[--word];
    }
    return word * 64 + 63 - static_cast<std::size_t>(std::countl_zero(w));
  }
  // The lowest set bit at or above `begin`, kNone when there is none.
  static std::size_t NextPlaced(const std::vector<std::uint64_t>& bits, std::size_t begin) {
    std::size_t word = begin / 64;
    if (word >= bits.size()) return kNone;
    std::uint64_t w = bits[word] & (~std::uint64_t{0} << (begin % 64));
    while (w == 0) {
      if (++word == bits.size()) return kNone;
      w = bits[word];
    }
    return word * 64 + static_cast<std::size_t>(std::countr_zero(w));
  }
  // TFLite's RecalcBestDist: the closest non-conflicting object, lowest id
  // on a tie; keeps the stale best object when there is none. Walks the
  // placed tensors outwards from i (nearest first); when that takes more
  // steps than an eighth of the objects (most nearby objects conflict with
  // i), it asks every object instead (the same answer). An eighth, not all:
  // on the shared training traces a walk that goes on that long rarely ends
  // before it, and stopping sooner was 1.8-2x faster.
  void Recalculate(std::size_t i) {
    const UsageRecord& ri = r_[i];
    std::uint64_t best = kNone;
    std::size_t best_object = best_object_[i];
    // `conflicts` is asked only when the object would win.
    auto consider = [&](std::uint64_t gap, std::size_t object, auto&& conflicts) {
      if (gap > best || (gap == best && object >= best_object)) return;
      if (conflicts()) return;
      best = gap;
      best_object = object;
    };
    const std::size_t max_steps = intervals_.size() / 8;
    std::size_t steps = 0;
    bool exhausted = false;
    // Placed tensors ending before i, nearest first (ranks in by_last_).
    const auto ends_before = static_cast<std::size_t>(
        std::lower_bound(by_last_.begin(), by_last_.end(), ri.first_task,
                         [&](std::size_t k, TaskIndex x) { return r_[k].last_task < x; }) -
        by_last_.begin());
    for (std::size_t rank = PrevPlaced(placed_by_last_, ends_before); rank != kNone;
         rank = PrevPlaced(placed_by_last_, rank)) {
      const std::size_t t = by_last_[rank];
      const auto gap = static_cast<std::uint64_t>(ri.first_task - r_[t].last_task);
      if (gap > best) break;
      if (steps++ == max_steps) {
        exhausted = true;
        break;
      }
      // t ends before i; its object conflicts with i when t's successor
      // there starts within i. (A successor that ends before i came earlier
      // in this walk: its object was settled then, and the walk stops
      // before it could be asked again.)
      consider(gap, object_of_[t], [&] {
        const std::size_t next = next_on_object_[t];
        return next != kNone && r_[next].first_task <= ri.last_task;
      });
    }
    // Placed tensors starting after i, nearest first (ranks in by_first_).
    for (std::size_t rank = exhausted ? kNone : NextPlaced(placed_by_first_, FirstRankAbove(ri.last_task));
         rank != kNone; rank = NextPlaced(placed_by_first_, rank + 1)) {
      const std::size_t t = by_first_[rank];
      const auto gap = static_cast<std::uint64_t>(r_[t].first_task - ri.last_task);
      if (gap > best) break;
      if (steps++ == max_steps) {
        exhausted = true;
        break;
      }
      // The mirror image of the walk above.
      consider(gap, object_of_[t], [&] {
        const std::size_t prev = prev_on_object_[t];
        return prev != kNone && r_[prev].last_task >= ri.first_task;
      });
    }
    budget_.Spend(steps);
    if (exhausted) {
      budget_.Spend(intervals_.size());
      best = kNone;
      best_object = best_object_[i];
      for (std::size_t object = 0; object < intervals_.size(); ++object) {
        const std::uint64_t gap = GapToObject(object, ri);
        if (gap < best) {
          best = gap;
          best_object = object;
        }
      }
    }
    SetBestDist(i, best);
    best_object_[i] = best_object;
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
  std::vector<std::vector<std::size_t>> groups_;  // tensors by position
  std::size_t active_ = 0;
  bool started_ = false;
  std::set<QueueEntry> queue_;
  std::vector<Intervals> intervals_;
  std::vector<std::vector<std::size_t>> tensors_on_;  // per object, in intervals_' order
  std::vector<std::size_t> prev_on_object_, next_on_object_;  // per placed tensor
  // Bit k set: by_last_[k] (by_first_[k]) is placed. Walking set bits in
  // rank order replaced two node sets of placed tensors (a fifth of the time).
  std::vector<std::uint64_t> placed_by_last_, placed_by_first_;
  std::vector<std::size_t> recalc_, improved_;
};

}  // namespace

Result<ObjectsPlan> GreedyBySizeObjects(std::span<const UsageRecord> records,
                                        const PlanParams& params) {
  TM_ASSIGN_OR_RETURN(std::vector<std::size_t> positions, Positions(records));
  const std::size_t n = records.size();
  if (!params.reference) {
    // When a quarter of all tensors are live at once, the event-driven
    // version does more work than the transcription's n^2 scans; run the
    // transcription there if its table fits (same result either way).
    const std::size_t most_live =
        positions.empty() ? 0 : *std::max_element(positions.begin(), positions.end()) + 1;
    if (4 * most_live >= n && n * most_live <= kReferenceMaxDistances) {
      Result<ObjectsPlan> plan = Reference(records, positions);
      if (plan.ok() || plan.status().code() != StatusCode::kResourceExhausted) return plan;
    }
    return FastGreedyBySize(records, positions, params).Run();
  }
  if (n > kReferenceMaxRecords)
    return ResourceExhausted("greedy_by_size reference path is quadratic; " + std::to_string(n) +
                             " records exceed its limit of " +
                             std::to_string(kReferenceMaxRecords) + " (use the default path)");
  return Reference(records, positions);
}

}  // namespace tensormem::planning
