// SPDX-License-Identifier: Apache-2.0
// greedy_in_order (objects): walk tensors in task order; before tensor i,
// release every object whose last user ended before i's first task. Among
// the free objects, take the one that wastes least: the smallest object >=
// the tensor (lowest id among equal sizes) or the largest smaller one
// (highest id among equal sizes), which then grows to the tensor's size; on
// a tie keep the one >= the tensor. No free object: a new one.
//
// With a reallocation graph, tensor i may take an object only if the tensor
// last placed on it is adjacent to i in the graph; the same rule picks among
// those objects.
//
// For 2-D/3-D/4-D extents an object qualifies only if it covers the tensor
// in every dimension (objects never grow); the one with the smallest
// difference in element count wins, the earliest released on a tie.
//
// TFLite GPU's GreedyInOrderAssignment keeps free objects in a set ordered
// by (size, id), so without a graph the literal transcription is already
// O(n log n) and both paths run it. With a graph the reference scans the
// whole free pool per tensor (as TFLite does); the default scans the pool or
// the tensor's neighbour list, whichever is shorter; the candidates, and so
// the result, are the same. The extent variant scans the free pool in
// release order (TFLite's GreedyInOrderAssignmentMultidimensional), which is
// O(n x free objects); there is no faster path for it. The pool scans give
// up with an error after kMaxScanned objects (work_budget.h).
#include <algorithm>
#include <list>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "planning/objects/objects_strategies.h"
#include "planning/objects/release_queue.h"
#include "planning/objects/work_budget.h"

namespace tensormem::planning {
namespace {

using PoolKey = std::pair<std::uint64_t, std::size_t>;  // (object size, object id)

// Free objects (or neighbours) looked at before giving up: the scans below
// are O(n x free objects) on adversarial inputs.
constexpr std::uint64_t kMaxScanned = 2'000'000'000;

// The least-waste choice between the smallest qualifying object >= size and
// the largest qualifying object < size.
std::optional<PoolKey> LeastWaste(std::uint64_t size, std::optional<PoolKey> at_least,
                                  std::optional<PoolKey> below) {
  if (!at_least) return below;
  if (!below) return at_least;
  return size - below->first < at_least->first - size ? below : at_least;
}

// The 1-D walk, its steps over the state they share: the free pool by
// (size, id), the objects in use by release time, and per object the tensor
// placed on it last and whether it is free.
class InOrder1D {
 public:
  InOrder1D(std::span<const UsageRecord> records, const PlanParams& params)
      : records_(records), params_(params), budget_(kMaxScanned, &params) {
    plan_.object_of.assign(records.size(), 0);
  }

  Result<ObjectsPlan> Run() {
    for (std::size_t i = 0; i < records_.size(); ++i) {
      if (budget_.Exhausted()) return budget_.Error("greedy_in_order (reallocation graph)", records_.size());
      in_use_.ReleaseBefore(records_[i].first_task, [&](std::size_t object) {
        pool_.insert({plan_.object_sizes[object], object});
        is_free_[object] = 1;
      });
      Place(i, params_.reallocation_graph ? ChooseAmongNeighbours(i) : ChooseFromPool(records_[i].size));
    }
    return std::move(plan_);
  }

 private:
  std::optional<PoolKey> ChooseFromPool(std::uint64_t size) const {
    auto it = pool_.lower_bound({size, 0});
    std::optional<PoolKey> at_least, below;
    if (it != pool_.end()) at_least = *it;
    if (it != pool_.begin()) below = *std::prev(it);
    return LeastWaste(size, at_least, below);
  }

  // Candidates: free objects whose last tensor is a neighbour of i, found by
  // scanning the pool or i's neighbour list, whichever is shorter (the
  // reference: always the pool).
  std::optional<PoolKey> ChooseAmongNeighbours(std::size_t i) {
    const std::uint64_t size = records_[i].size;
    const std::vector<std::size_t>& adjacent = (*params_.reallocation_graph)[i];
    std::optional<PoolKey> at_least, below;
    auto consider = [&](PoolKey key) {
      if (key.first >= size) {
        if (!at_least || key < *at_least) at_least = key;
      } else if (!below || key > *below) {
        below = key;
      }
    };
    if (!params_.reference && adjacent.size() < pool_.size()) {
      budget_.Spend(adjacent.size());
      for (std::size_t v : adjacent) {
        if (v >= i) break;  // adjacency is sorted; only placed tensors own objects
        const std::size_t object = plan_.object_of[v];
        if (is_free_[object] && last_tensor_[object] == v) consider({plan_.object_sizes[object], object});
      }
    } else {
      budget_.Spend(pool_.size());
      for (const PoolKey& key : pool_)
        if (std::binary_search(adjacent.begin(), adjacent.end(), last_tensor_[key.second])) consider(key);
    }
    return LeastWaste(size, at_least, below);
  }

  // Tensor i on the chosen free object (which grows to it), or on a new one.
  void Place(std::size_t i, std::optional<PoolKey> choice) {
    const UsageRecord& r = records_[i];
    std::size_t object;
    if (choice) {
      object = choice->second;
      pool_.erase(*choice);
      plan_.object_sizes[object] = std::max(plan_.object_sizes[object], r.size);
    } else {
      object = plan_.object_sizes.size();
      plan_.object_sizes.push_back(r.size);
      last_tensor_.push_back(i);
      is_free_.push_back(0);
    }
    is_free_[object] = 0;
    last_tensor_[object] = i;
    plan_.object_of[i] = object;
    in_use_.Push(r.last_task, object);
  }

  std::span<const UsageRecord> records_;
  const PlanParams& params_;
  ObjectsPlan plan_;
  std::set<PoolKey> pool_;
  ReleaseQueue in_use_;
  std::vector<std::size_t> last_tensor_;  // per object: the tensor placed on it last
  std::vector<char> is_free_;             // per object
  WorkBudget budget_;
};

Result<ObjectsPlan> GreedyInOrder1D(std::span<const UsageRecord> records, const PlanParams& params) {
  return InOrder1D(records, params).Run();
}

Result<ExtentObjectsPlan> GreedyInOrderExtents(std::span<const ExtentRecord> records) {
  ExtentObjectsPlan plan;
  plan.object_of.assign(records.size(), 0);
  std::vector<std::uint64_t> object_elements;
  std::list<std::size_t> pool;  // free objects in release order
  ReleaseQueue in_use;
  WorkBudget budget(kMaxScanned);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const ExtentRecord& r = records[i];
    in_use.ReleaseBefore(r.first_task, [&](std::size_t object) { pool.push_back(object); });
    budget.Spend(pool.size());
    if (budget.Exhausted()) return budget.Error("greedy_in_order (extents)", records.size());
    const std::uint64_t elements = r.size.Elements();
    auto best = pool.end();
    std::uint64_t best_diff = 0;
    for (auto it = pool.begin(); it != pool.end(); ++it) {
      const Extent& object_size = plan.object_sizes[*it];
      if (!object_size.Covers(r.size)) continue;
      const std::uint64_t diff = object_elements[*it] - elements;
      if (best == pool.end() || diff < best_diff) {
        best = it;
        best_diff = diff;
      }
    }
    std::size_t object;
    if (best != pool.end()) {
      object = *best;
      pool.erase(best);
    } else {
      object = plan.object_sizes.size();
      plan.object_sizes.push_back(r.size);
      object_elements.push_back(elements);
    }
    plan.object_of[i] = object;
    in_use.Push(r.last_task, object);
  }
  return plan;
}

}  // namespace

Result<ObjectsPlan> GreedyInOrderObjects(std::span<const UsageRecord> records,
                                         const PlanParams& params) {
  if (params.reallocation_graph != nullptr && params.reallocation_graph->size() != records.size())
    return InvalidArgument("the reallocation graph has " +
                           std::to_string(params.reallocation_graph->size()) +
                           " vertices for " + std::to_string(records.size()) + " tensors");
  return GreedyInOrder1D(records, params);
}

Result<ExtentObjectsPlan> GreedyInOrderObjects(std::span<const ExtentRecord> records,
                                               const PlanParams& params) {
  if (params.reallocation_graph != nullptr)
    return InvalidArgument("greedy_in_order takes a reallocation graph for 1-D sizes only");
  return GreedyInOrderExtents(records);
}

}  // namespace tensormem::planning
