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

Result<ObjectsPlan> GreedyInOrder1D(std::span<const UsageRecord> records,
                                    const PlanParams& params) {
  const ReallocationGraph* graph = params.reallocation_graph;
  const std::size_t n = records.size();
  ObjectsPlan plan;
  plan.object_of.assign(n, 0);
  std::set<PoolKey> pool;
  ReleaseQueue in_use;
  std::vector<std::size_t> last_tensor;  // per object: the tensor placed on it last
  std::vector<char> is_free;             // per object
  WorkBudget budget(kMaxScanned, &params);
  for (std::size_t i = 0; i < n; ++i) {
    if (budget.Exhausted()) return budget.Error("greedy_in_order (reallocation graph)", n);
    const UsageRecord& r = records[i];
    in_use.ReleaseBefore(r.first_task, [&](std::size_t object) {
      pool.insert({plan.object_sizes[object], object});
      is_free[object] = 1;
    });
    std::optional<PoolKey> choice;
    if (graph == nullptr) {
      auto it = pool.lower_bound({r.size, 0});
      std::optional<PoolKey> at_least, below;
      if (it != pool.end()) at_least = *it;
      if (it != pool.begin()) below = *std::prev(it);
      choice = LeastWaste(r.size, at_least, below);
    } else {
      // Candidates: free objects whose last tensor is a neighbour of i.
      const std::vector<std::size_t>& adjacent = (*graph)[i];
      std::optional<PoolKey> at_least, below;
      auto consider = [&](PoolKey key) {
        if (key.first >= r.size) {
          if (!at_least || key < *at_least) at_least = key;
        } else if (!below || key > *below) {
          below = key;
        }
      };
      if (!params.reference && adjacent.size() < pool.size()) {
        budget.Spend(adjacent.size());
        for (std::size_t v : adjacent) {
          if (v >= i) break;  // adjacency is sorted; only placed tensors own objects
          const std::size_t object = plan.object_of[v];
          if (is_free[object] && last_tensor[object] == v)
            consider({plan.object_sizes[object], object});
        }
      } else {
        budget.Spend(pool.size());
        for (const PoolKey& key : pool)
          if (std::binary_search(adjacent.begin(), adjacent.end(), last_tensor[key.second]))
            consider(key);
      }
      choice = LeastWaste(r.size, at_least, below);
    }
    std::size_t object;
    if (choice) {
      object = choice->second;
      pool.erase(*choice);
      plan.object_sizes[object] = std::max(plan.object_sizes[object], r.size);
    } else {
      object = plan.object_sizes.size();
      plan.object_sizes.push_back(r.size);
      last_tensor.push_back(i);
      is_free.push_back(0);
    }
    is_free[object] = 0;
    last_tensor[object] = i;
    plan.object_of[i] = object;
    in_use.Push(r.last_task, object);
  }
  return plan;
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
