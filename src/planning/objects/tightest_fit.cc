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

Result<ObjectsPlan> Fast(std::span<const UsageRecord> records, const PlanParams& params) {
  const std::size_t n = records.size();
  WorkBudget budget(kMaxWork, &params);
  ObjectsPlan plan;
  plan.object_of.assign(n, 0);
  // Slots in last-task order; the prefix opened before task f is the
  // tensors whose last task is < f.
  std::vector<std::pair<TaskIndex, std::size_t>> keyed(n);
  for (std::size_t i = 0; i < n; ++i) keyed[i] = {records[i].last_task, i};
  if (!internal::StableSortUntil(keyed, std::less<std::pair<TaskIndex, std::size_t>>(),
                                 budget.deadline()))
    return budget.Error("tightest_fit", n);
  std::vector<std::size_t> by_last(n), slot(n);
  std::vector<TaskIndex> last_by_rank(n);
  for (std::size_t k = 0; k < n; ++k) {
    std::tie(last_by_rank[k], by_last[k]) = keyed[k];
    slot[by_last[k]] = k;
  }
  // Per tensor, the slots opened before its first task (last task < first):
  // one pass, as records come in first-task order, instead of a binary
  // search per placement (a cache miss per step at 10^6 tensors).
  std::vector<std::size_t> prefix_of(n);
  for (std::size_t i = 0, k = 0; i < n; ++i) {
    while (k < n && last_by_rank[k] < records[i].first_task) ++k;
    prefix_of[i] = k;
  }
  StretchTree closed(n);
  std::vector<std::size_t> next(n, kNone);     // the tensor after it on its object
  std::vector<std::size_t> first_of, last_of;  // per object
  // Open stretches: after each object's last tensor, by (its last task,
  // object descending) so that the predecessor of a task is the latest, then
  // lowest object; before each object's first tensor, by (its first task,
  // object).
  std::set<std::pair<TaskIndex, std::size_t>, std::less<>> before_first;
  struct LaterLowerObject {
    bool operator()(const std::pair<TaskIndex, std::size_t>& a,
                    const std::pair<TaskIndex, std::size_t>& b) const {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    }
  };
  std::set<std::pair<TaskIndex, std::size_t>, LaterLowerObject> after_last;
  auto close = [&](std::size_t p, std::size_t q) {  // p then q on p's object
    next[p] = q;
    closed.Set(slot[p], records[q].first_task,
               static_cast<std::uint64_t>(records[q].first_task - records[p].last_task),
               plan.object_of[p]);
  };
  const std::optional<std::vector<std::size_t>> order = PlacementOrder(records, budget.deadline());
  if (!order) return budget.Error("tightest_fit", n);
  for (std::size_t t : *order) {
    const UsageRecord& r = records[t];
    if (budget.Exhausted()) return budget.Error("tightest_fit", n);
    std::uint64_t visited = 0;
    const std::size_t prefix = prefix_of[t];
    std::size_t opener_slot = kNone;  // the slot of the tensor before t's closed stretch
    Choice best = closed.Best(prefix, r.last_task, last_by_rank, &opener_slot, &visited);
    budget.Spend(visited + 2);
    if (best.object == kNone) {
      // Open stretches: the latest end of an object before f, the earliest
      // start of an object after l.
      Choice open;
      auto after = after_last.lower_bound({r.first_task, kNone});
      if (after != after_last.begin()) {
        --after;
        open = Choice{true, static_cast<std::uint64_t>(r.first_task - after->first), after->second};
      }
      auto before = before_first.upper_bound(std::pair<TaskIndex, std::size_t>{r.last_task, kNone});
      if (before != before_first.end()) {
        const Choice c{true, static_cast<std::uint64_t>(before->first - r.last_task),
                       before->second};
        if (c < open) open = c;
      }
      best = open;
    }
    std::size_t object = best.object;
    if (object == kNone) {
      object = plan.object_sizes.size();
      plan.object_sizes.push_back(r.size);
      first_of.push_back(t);
      last_of.push_back(t);
      plan.object_of[t] = object;
      before_first.emplace(r.first_task, object);
      after_last.emplace(r.last_task, object);
      continue;
    }
    plan.object_of[t] = object;
    if (best.open && records[last_of[object]].last_task < r.first_task) {
      const std::size_t p = last_of[object];
      after_last.erase({records[p].last_task, object});
      after_last.emplace(r.last_task, object);
      last_of[object] = t;
      close(p, t);
    } else if (best.open) {
      const std::size_t q = first_of[object];
      before_first.erase({records[q].first_task, object});
      before_first.emplace(r.first_task, object);
      first_of[object] = t;
      close(t, q);
    } else {
      const std::size_t p = by_last[opener_slot], q = next[p];
      close(p, t);
      close(t, q);
    }
  }
  return plan;
}

}  // namespace

Result<ObjectsPlan> TightestFitObjects(std::span<const UsageRecord> records,
                                       const PlanParams& params) {
  if (params.reference) return Reference(records, params);
  return Fast(records, params);
}

}  // namespace tensormem::planning
