// SPDX-License-Identifier: Apache-2.0
// tightest_fit (objects), ours (TFLite has no counterpart): tensors in
// decreasing size (ties: earlier first task, then lower index), each put on
// the existing object whose free stretch around it is the shortest, a
// best-fit in time. A free stretch of an object is the tasks between two of
// its consecutive tensors (closed), or before its first or after its last
// (open); a tensor fits one that holds its whole lifetime. A closed stretch
// beats every open one; open ones are ranked by the distance from their
// closed end to the tensor; ties go to the lowest object id; no fit: a new
// object. Larger tensors come first, so an object never grows (its size is
// its first tensor's), and short stretches go to short tensors, keeping long
// ones for long tensors: the objects fill up the way the positional maximums
// (the lower bound) do. On the shared traces it ends within 0.4 % of the
// bound, in milliseconds where greedy_by_size is quadratic.
//
// Reference: per tensor, every object's stretch around it (a search in the
// object's ordered tensors): O(n x objects x log n).
// Default: the closed stretches sit in a segment tree indexed by the tensor
// that opens them (in last-task order); a node keeps the latest end and the
// smallest (length, object) below it. A tensor [f, l] searches the prefix of
// stretches opened before f for one that ends after l, from the prefix's
// right end leftwards (its canonical subtrees, then right child first),
// pruning subtrees that end too early, whose smallest stretch cannot beat
// the best so far, or whose latest opener a is so early that any stretch
// there holding the tensor is longer than the best (at least l + 1 - a):
// the last prune ends the search once the fits found are tight. The
// open stretches are two ordered sets, by the last task of each object's
// last tensor and by the first task of its first. A placement changes at
// most two leaves and the sets. Same result as the reference. Both paths
// give up with an error after a work budget (work_budget.h): the pruning
// has no useful worst-case bound.
#include <algorithm>
#include <iterator>
#include <limits>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <set>
#include <span>
#include <utility>

#include "core/sort_until.h"
#include "planning/objects/objects_strategies.h"
#include "planning/objects/work_budget.h"

namespace tensormem::planning {
namespace {

// Units before giving up, about 10 s of either on a 2-core machine: tree
// nodes visited (default), objects scanned (reference, each a search).
constexpr std::uint64_t kMaxWork = 1'000'000'000;
constexpr std::uint64_t kMaxReferenceWork = 500'000'000;
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// A candidate stretch, ordered as the rule above: closed before open, then
// by length (closed) or distance (open), then object.
struct Choice {
  bool open = true;
  std::uint64_t value = std::numeric_limits<std::uint64_t>::max();
  std::size_t object = kNone;
  bool operator<(const Choice& o) const {
    if (open != o.open) return !open;
    if (value != o.value) return value < o.value;
    return object < o.object;
  }
};

// Larger first; ties by index, which is first-task order (records arrive
// sorted by first task). (size, index) pairs sort in memory order, under the
// deadline: nullopt once it passes.
std::optional<std::vector<std::size_t>> PlacementOrder(std::span<const UsageRecord> records,
                                                       internal::Deadline* deadline) {
  std::vector<std::pair<std::uint64_t, std::size_t>> keyed(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) keyed[i] = {records[i].size, i};
  if (!internal::StableSortUntil(
          keyed,
          [](const auto& a, const auto& b) {
            return a.first != b.first ? a.first > b.first : a.second < b.second;
          },
          deadline))
    return std::nullopt;
  std::vector<std::size_t> order(records.size());
  for (std::size_t k = 0; k < keyed.size(); ++k) order[k] = keyed[k].second;
  return order;
}

Result<ObjectsPlan> Reference(std::span<const UsageRecord> records, const PlanParams& params) {
  WorkBudget budget(kMaxReferenceWork, &params);
  ObjectsPlan plan;
  plan.object_of.assign(records.size(), 0);
  std::vector<std::map<TaskIndex, TaskIndex>> objects;  // first task -> last task
  const std::optional<std::vector<std::size_t>> order = PlacementOrder(records, budget.deadline());
  if (!order) return budget.Error("tightest_fit (reference)", records.size());
  for (std::size_t i : *order) {
    const UsageRecord& r = records[i];
    budget.Spend(objects.size() + 1);
    if (budget.Exhausted()) return budget.Error("tightest_fit (reference)", records.size());
    Choice best;
    for (std::size_t o = 0; o < objects.size(); ++o) {
      const auto next = objects[o].upper_bound(r.first_task);
      if (next != objects[o].end() && next->first <= r.last_task) continue;
      const bool has_prev = next != objects[o].begin();
      if (has_prev && std::prev(next)->second >= r.first_task) continue;
      const bool has_next = next != objects[o].end();
      Choice c;
      c.object = o;
      c.open = !has_prev || !has_next;
      if (!c.open) {
        c.value = static_cast<std::uint64_t>(next->first - std::prev(next)->second);
      } else {
        c.value = has_prev ? static_cast<std::uint64_t>(r.first_task - std::prev(next)->second)
                           : static_cast<std::uint64_t>(next->first - r.last_task);
      }
      if (c < best) best = c;
    }
    if (best.object == kNone) {
      best.object = objects.size();
      objects.emplace_back();
      plan.object_sizes.push_back(r.size);
    }
    objects[best.object].emplace(r.first_task, r.last_task);
    plan.object_of[i] = best.object;
  }
  return plan;
}

// The closed stretches: slot k holds the stretch after the tensor of rank k
// in last-task order (empty: end -1, as every tensor's last task is >= 0).
class StretchTree {
 public:
  explicit StretchTree(std::size_t n) {
    while (leaves_ < std::max<std::size_t>(n, 1)) leaves_ *= 2;
    nodes_.assign(2 * leaves_, Node{});
  }
  void Set(std::size_t slot, TaskIndex end, std::uint64_t length, std::size_t object) {
    std::size_t node = leaves_ + slot;
    nodes_[node] = Node{end, length, object};
    for (node /= 2; node >= 1; node /= 2) {
      const Node& l = nodes_[2 * node];
      const Node& r = nodes_[2 * node + 1];
      Node up = Smaller(l, r) ? l : r;
      up.end = std::max(l.end, r.end);
      Node& cur = nodes_[node];
      if (up.end == cur.end && up.length == cur.length && up.object == cur.object) break;
      cur = up;
    }
  }
  // The shortest stretch (then lowest object) among slots [0, limit) whose
  // end is > last, as a closed Choice, and its slot (kNone: none);
  // `visited` counts the nodes looked at (the work budget's units).
  // opener_last[k]: the last task of slot k's opener (non-decreasing).
  Choice Best(std::size_t limit, TaskIndex last, std::span<const TaskIndex> opener_last,
              std::size_t* slot, std::uint64_t* visited) const {
    Node best;
    *slot = kNone;
    // The prefix's canonical subtrees from its right end leftwards (a finger
    // search): a subtree opens no later than the ones to its right, so once
    // its lower bound on length (Walk) is above the best, so is every
    // subtree further left. The best fit is usually close to the tensor.
    std::size_t l = leaves_, r = leaves_ + limit;
    for (int level = 0; l < r; ++level, l /= 2, r /= 2) {
      std::size_t node = kNone;
      if (r & 1) {
        node = --r;
      } else if (l & 1) {  // only the root, when the prefix is every slot
        node = l++;
      }
      if (node == kNone) continue;
      const std::size_t lo = (node << level) - leaves_, hi = ((node + 1) << level) - leaves_;
      ++*visited;
      if (static_cast<std::uint64_t>(last + 1 - opener_last[hi - 1]) > best.length) break;
      Walk(node, lo, hi, last, opener_last, &best, slot, visited);
    }
    if (*slot == kNone) return Choice{};
    return Choice{false, best.length, best.object};
  }

 private:
  // A node: the latest end below it, and the smallest (length, object)
  // below it (not necessarily of the same stretch). Packing length and
  // object into one word (16-byte nodes) gained about 6 % at 2 x 10^6
  // records: not worth a second layout.
  struct Node {
    TaskIndex end = -1;
    std::uint64_t length = std::numeric_limits<std::uint64_t>::max();
    std::size_t object = kNone;
  };
  static bool Smaller(const Node& a, const Node& b) {
    return a.length != b.length ? a.length < b.length : a.object < b.object;
  }
  // Within one canonical subtree of the prefix (every slot of [lo, hi) is
  // in it).
  void Walk(std::size_t node, std::size_t lo, std::size_t hi, TaskIndex last,
            std::span<const TaskIndex> opener_last, Node* best, std::size_t* slot,
            std::uint64_t* visited) const {
    ++*visited;
    const Node& n = nodes_[node];
    if (n.end <= last || !Smaller(n, *best)) return;
    // A stretch here that holds the tensor ends after `last` and opens no
    // later than the subtree's latest opener, so it is at least this long:
    // the node's minimum may be a stretch that ends too early to count.
    if (static_cast<std::uint64_t>(last + 1 - opener_last[hi - 1]) > best->length) return;
    if (node >= leaves_) {
      *best = n;
      *slot = node - leaves_;
      return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    // The right child first: its stretches open later, closer to the
    // tensor, and a tight fit found there prunes the left one by the bound.
    Walk(2 * node + 1, mid, hi, last, opener_last, best, slot, visited);
    Walk(2 * node, lo, mid, last, opener_last, best, slot, visited);
  }

  std::size_t leaves_ = 1;
  std::vector<Node> nodes_;
};

// The default path, its steps over the state they share: slots in
// last-task order (the prefix opened before task f is the tensors whose
// last task is < f), the closed stretches between consecutive tensors of an
// object (StretchTree), and the open stretches before each object's first
// tensor and after its last.
class TightestFit {
 public:
  TightestFit(std::span<const UsageRecord> records, const PlanParams& params)
      : records_(records), budget_(kMaxWork, &params), closed_(records.size()), next_(records.size(), kNone) {
    plan_.object_of.assign(records.size(), 0);
  }

  // Slots in last-task order, and per tensor the slots opened before its
  // first task (last task < first): one pass, as records come in first-task
  // order, instead of a binary search per placement (a cache miss per step
  // at 10^6 tensors).
  Status RankByLastTask() {
    const std::size_t n = records_.size();
    std::vector<std::pair<TaskIndex, std::size_t>> keyed(n);
    for (std::size_t i = 0; i < n; ++i) keyed[i] = {records_[i].last_task, i};
    if (!internal::StableSortUntil(keyed, std::less<std::pair<TaskIndex, std::size_t>>(), budget_.deadline()))
      return budget_.Error("tightest_fit", n);
    by_last_.resize(n);
    slot_.resize(n);
    last_by_rank_.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      std::tie(last_by_rank_[k], by_last_[k]) = keyed[k];
      slot_[by_last_[k]] = k;
    }
    prefix_of_.resize(n);
    for (std::size_t i = 0, k = 0; i < n; ++i) {
      while (k < n && last_by_rank_[k] < records_[i].first_task) ++k;
      prefix_of_[i] = k;
    }
    return Status::Ok();
  }

  Result<ObjectsPlan> PlaceAll() {
    const std::optional<std::vector<std::size_t>> order = PlacementOrder(records_, budget_.deadline());
    if (!order) return budget_.Error("tightest_fit", records_.size());
    for (std::size_t t : *order) {
      if (budget_.Exhausted()) return budget_.Error("tightest_fit", records_.size());
      Place(t);
    }
    return std::move(plan_);
  }

 private:
  // Tensor t on the object of the tightest stretch that holds it (closed
  // ones first), or on a new object.
  void Place(std::size_t t) {
    const UsageRecord& r = records_[t];
    std::uint64_t visited = 0;
    std::size_t opener_slot = kNone;  // the slot of the tensor before t's closed stretch
    Choice best = closed_.Best(prefix_of_[t], r.last_task, last_by_rank_, &opener_slot, &visited);
    budget_.Spend(visited + 2);
    if (best.object == kNone) best = TightestOpen(r);
    if (best.object == kNone) return NewObject(t);
    plan_.object_of[t] = best.object;
    if (best.open) return Extend(t, best.object);
    const std::size_t p = by_last_[opener_slot], q = next_[p];
    Close(p, t);
    Close(t, q);
  }

  // Open stretches: the latest end of an object before f, the earliest
  // start of an object after l.
  Choice TightestOpen(const UsageRecord& r) const {
    Choice open;
    auto after = after_last_.lower_bound({r.first_task, kNone});
    if (after != after_last_.begin()) {
      --after;
      open = Choice{true, static_cast<std::uint64_t>(r.first_task - after->first), after->second};
    }
    auto before = before_first_.upper_bound(std::pair<TaskIndex, std::size_t>{r.last_task, kNone});
    if (before != before_first_.end()) {
      const Choice c{true, static_cast<std::uint64_t>(before->first - r.last_task), before->second};
      if (c < open) open = c;
    }
    return open;
  }

  void NewObject(std::size_t t) {
    const UsageRecord& r = records_[t];
    const std::size_t object = plan_.object_sizes.size();
    plan_.object_sizes.push_back(r.size);
    first_of_.push_back(t);
    last_of_.push_back(t);
    plan_.object_of[t] = object;
    before_first_.emplace(r.first_task, object);
    after_last_.emplace(r.last_task, object);
  }

  // Tensor t after the object's last tensor, or before its first.
  void Extend(std::size_t t, std::size_t object) {
    const UsageRecord& r = records_[t];
    if (records_[last_of_[object]].last_task < r.first_task) {
      const std::size_t p = last_of_[object];
      after_last_.erase({records_[p].last_task, object});
      after_last_.emplace(r.last_task, object);
      last_of_[object] = t;
      Close(p, t);
    } else {
      const std::size_t q = first_of_[object];
      before_first_.erase({records_[q].first_task, object});
      before_first_.emplace(r.first_task, object);
      first_of_[object] = t;
      Close(t, q);
    }
  }

  // p then q on p's object: the stretch between them is closed.
  void Close(std::size_t p, std::size_t q) {
    next_[p] = q;
    closed_.Set(slot_[p], records_[q].first_task,
                static_cast<std::uint64_t>(records_[q].first_task - records_[p].last_task), plan_.object_of[p]);
  }

  // Open stretches after each object's last tensor, by (its last task,
  // object descending) so that the predecessor of a task is the latest,
  // then lowest object.
  struct LaterLowerObject {
    bool operator()(const std::pair<TaskIndex, std::size_t>& a, const std::pair<TaskIndex, std::size_t>& b) const {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    }
  };

  std::span<const UsageRecord> records_;
  WorkBudget budget_;
  ObjectsPlan plan_;
  std::vector<std::size_t> by_last_, slot_, prefix_of_;
  std::vector<TaskIndex> last_by_rank_;
  StretchTree closed_;
  std::vector<std::size_t> next_;              // the tensor after it on its object
  std::vector<std::size_t> first_of_, last_of_;  // per object
  // Open stretches before each object's first tensor, by (its first task,
  // object).
  std::set<std::pair<TaskIndex, std::size_t>, std::less<>> before_first_;
  std::set<std::pair<TaskIndex, std::size_t>, LaterLowerObject> after_last_;
};

Result<ObjectsPlan> Fast(std::span<const UsageRecord> records, const PlanParams& params) {
  TightestFit fit(records, params);
  TM_RETURN_IF_ERROR(fit.RankByLastTask());
  return fit.PlaceAll();
}

}  // namespace

Result<ObjectsPlan> TightestFitObjects(std::span<const UsageRecord> records,
                                       const PlanParams& params) {
  if (params.reference) return Reference(records, params);
  return Fast(records, params);
}

}  // namespace tensormem::planning
