// SPDX-License-Identifier: Apache-2.0
// Shared-objects strategies: every plan validates and respects the lower
// bound, the scalable default paths equal the faithful transcriptions, the
// edge cases (empty, zero bytes, unsorted input, multi-GiB sizes) behave,
// the reallocation graph restricts greedy_in_order, and the extent variants
// and their errors.
#include <algorithm>
#include <numeric>
#include <queue>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "core/checked_math.h"
#include "core/deadline.h"
#include "core/positional_maximums.h"
#include "core/sort_until.h"
#include "harness/generators.h"
#include "planning/breadth_order.h"
#include "planning/objects/min_cost_flow.h"
#include "planning/objects/work_budget.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"
#include "tensormem/validator.h"

namespace tensormem {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// Inputs for the sweeps: network-like chains, uniform random lifetimes with
// zero-byte tensors, and tiny size / task ranges that force ties everywhere.
std::vector<UsageRecord> Mixed(std::uint64_t seed, std::size_t n) {
  switch (seed % 4) {
    case 0: return internal::GenerateNetworkRecords(n, seed, 8, 0.4);
    case 1: return internal::GenerateRandomRecords(n, seed, static_cast<TaskIndex>(n / 2 + 2), 1000, true);
    case 2: return internal::GenerateRandomRecords(n, seed, 12, 4, true);  // ties
    default: return internal::GenerateNetworkRecords(n, seed);
  }
}

void ExpectSound(std::span<const UsageRecord> records, const ObjectsPlan& plan) {
  ASSERT_TRUE(ValidateObjectsPlan(records, plan).ok()) << ValidateObjectsPlan(records, plan).ToString();
  EXPECT_EQ(plan.lower_bound, ObjectsLowerBound(records));
  EXPECT_GE(TotalSize(plan), plan.lower_bound);
}

class EveryObjectsStrategy : public ::testing::TestWithParam<ObjectsStrategy> {};

TEST_P(EveryObjectsStrategy, ValidPlansAboveTheLowerBound) {
  for (std::uint64_t seed = 1; seed <= 24; ++seed) {
    const auto records = Mixed(seed, 60 + seed * 13);
    for (bool reference : {false, true}) {
      if (reference && records.size() > 200) continue;  // min_cost_flow's reference is cubic
      PlanParams params;
      params.reference = reference;
      Result<ObjectsPlan> plan = PlanObjects(records, GetParam(), params);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      ExpectSound(records, *plan);
      EXPECT_FALSE(plan->strategy.empty());
    }
  }
}

TEST_P(EveryObjectsStrategy, EmptyInput) {
  for (bool reference : {false, true}) {
    PlanParams params;
    params.reference = reference;
    Result<ObjectsPlan> plan = PlanObjects(std::span<const UsageRecord>(), GetParam(), params);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_TRUE(plan->object_of.empty());
    EXPECT_EQ(TotalSize(*plan), 0u);
  }
}

TEST_P(EveryObjectsStrategy, ZeroByteTensorsCostNothing) {
  std::vector<UsageRecord> zeros = {{0, 0, 3}, {0, 1, 2}, {0, 2, 5}, {0, 4, 4}, {0, 0, 9}};
  Result<ObjectsPlan> plan = PlanObjects(zeros, GetParam());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ExpectSound(zeros, *plan);
  EXPECT_EQ(TotalSize(*plan), 0u);
  // Mixed with real tensors: the zero-byte ones add nothing to the best plans.
  std::vector<UsageRecord> mixed = {{64, 0, 2}, {0, 1, 3}, {32, 3, 4}, {0, 2, 6}, {64, 5, 6}};
  plan = PlanObjects(mixed, GetParam());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ExpectSound(mixed, *plan);
}

TEST_P(EveryObjectsStrategy, UnsortedInputMapsBack) {
  // Distinct first tasks, so sorting is unambiguous and the plan of a
  // shuffled input is the plan of the sorted one, renumbered.
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const auto sorted = internal::GenerateNetworkRecords(300, seed, 10, 0.3);
    std::vector<std::size_t> perm(sorted.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed));
    std::vector<UsageRecord> shuffled(sorted.size());
    for (std::size_t k = 0; k < perm.size(); ++k) shuffled[k] = sorted[perm[k]];
    Result<ObjectsPlan> a = PlanObjects(sorted, GetParam());
    Result<ObjectsPlan> b = PlanObjects(shuffled, GetParam());
    ASSERT_TRUE(a.ok() && b.ok());
    ExpectSound(shuffled, *b);
    for (std::size_t k = 0; k < perm.size(); ++k)
      ASSERT_EQ(b->object_of[k], a->object_of[perm[k]]) << "seed " << seed << " tensor " << k;
    EXPECT_EQ(a->object_sizes, b->object_sizes);
  }
}

TEST_P(EveryObjectsStrategy, MultiGiBSizes) {
  // Sizes of several GiB (and up to 2^62) overflow 32-bit costs and sums.
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    auto records = Mixed(seed, seed % 2 ? 150 : 400);  // 400: min_cost_flow's windowed path
    std::mt19937_64 rng(seed);
    for (UsageRecord& r : records)
      if (r.size != 0) r.size = (seed == 8 ? std::uint64_t{1} << 62 : 3 * kGiB) + rng() % (5 * kGiB);
    Result<ObjectsPlan> plan = PlanObjects(records, GetParam());
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ExpectSound(records, *plan);
  }
  // A chain of growing multi-GiB tensors fits on one object.
  std::vector<UsageRecord> chain = {{5 * kGiB, 0, 1}, {6 * kGiB, 2, 3}, {7 * kGiB, 4, 5}};
  Result<ObjectsPlan> plan = PlanObjects(chain, GetParam());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  if (GetParam() != ObjectsStrategy::kNaive && GetParam() != ObjectsStrategy::kEquality) {
    EXPECT_EQ(plan->object_sizes, std::vector<std::uint64_t>{7 * kGiB});
  }
}

TEST_P(EveryObjectsStrategy, FastEqualsReference) {
  // min_cost_flow (and best and greedy_best, which may pick it) run the
  // reference up to 100 records and a windowed solver above: compare them
  // there only. The others have their own fast path at every size.
  const bool small_only = GetParam() == ObjectsStrategy::kMinCostFlow ||
                          GetParam() == ObjectsStrategy::kBest;
  PlanParams ref;
  ref.reference = true;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const std::size_t n = small_only ? 20 + seed * 2 : 20 + seed * 11;
    const auto records = Mixed(seed, n);
    Result<ObjectsPlan> a = PlanObjects(records, GetParam());
    Result<ObjectsPlan> b = PlanObjects(records, GetParam(), ref);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    ASSERT_EQ(a->object_of, b->object_of) << "seed " << seed << " n " << n;
    ASSERT_EQ(a->object_sizes, b->object_sizes) << "seed " << seed;
    EXPECT_EQ(a->strategy, b->strategy);
  }
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, EveryObjectsStrategy,
                         ::testing::ValuesIn(AllObjectsStrategies().begin(),
                                             AllObjectsStrategies().end()),
                         [](const auto& param_info) { return std::string(Name(param_info.param)); });

// A larger sweep for the strategies whose fast path is a different
// algorithm from the transcription (greedy_by_size is event driven,
// greedy_by_breadth walks a size-ordered set).
TEST(ObjectsFastPaths, EqualReferenceOnLargerInputs) {
  PlanParams ref;
  ref.reference = true;
  for (ObjectsStrategy s : {ObjectsStrategy::kGreedyBySize, ObjectsStrategy::kGreedyByBreadth,
                            ObjectsStrategy::kTightestFit}) {
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
      const auto records = Mixed(seed, 1200 + seed * 50);
      Result<ObjectsPlan> a = PlanObjects(records, s);
      Result<ObjectsPlan> b = PlanObjects(records, s, ref);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(a->object_of, b->object_of) << Name(s) << " seed " << seed;
      ASSERT_EQ(a->object_sizes, b->object_sizes);
    }
  }
}

// An allocation stream: most tensors freed within a few tasks, one in ten
// living long, sizes from a few values. Few tensors are live at once against
// n (the event-driven path runs), the sizes make many positions, and equal
// sizes and gaps make ties: the waiting positions' states are worked out
// late, ties between objects included (greedy_by_size's CheckWaiting).
std::vector<UsageRecord> AllocationStream(std::uint64_t seed, std::size_t n) {
  std::mt19937_64 rng(seed);
  const std::uint64_t sizes[] = {64, 128, 256, 1024, 4096, 4096, 65536};
  std::vector<UsageRecord> records;
  for (std::size_t i = 0; i < n; ++i) {
    const auto first = static_cast<TaskIndex>(i * (1 + rng() % 2));
    const auto length = static_cast<TaskIndex>(rng() % 10 == 0 ? rng() % (n / 8) : rng() % 6);
    records.push_back({sizes[rng() % 7], first, first + length});
  }
  return records;
}

// greedy_by_size and tightest_fit, whose default paths are other algorithms
// than their references.
TEST(ObjectsFastPaths, EqualReferenceOnAllocationStreams) {
  PlanParams ref;
  ref.reference = true;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    const auto records = AllocationStream(seed, 400 + seed * 100);
    // Below a quarter live at once: greedy_by_size's event-driven path, not
    // its transcription.
    ASSERT_LT(4 * MaxLiveTensors(records), records.size()) << "seed " << seed;
    for (ObjectsStrategy s : {ObjectsStrategy::kGreedyBySize, ObjectsStrategy::kTightestFit}) {
      Result<ObjectsPlan> a = PlanObjects(records, s);
      Result<ObjectsPlan> b = PlanObjects(records, s, ref);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(a->object_of, b->object_of) << Name(s) << " seed " << seed;
      ASSERT_EQ(a->object_sizes, b->object_sizes) << Name(s);
    }
  }
}

// tightest_fit's rule, one part per case, on both paths. Larger tensors
// are placed first and make the objects (an object's size is its first
// tensor's); the last, 1-byte tensor is the one each case is about.
TEST(TightestFit, FollowsItsRule) {
  struct Case {
    const char* what;
    std::vector<UsageRecord> records;
    std::vector<std::size_t> object_of;
    std::vector<std::uint64_t> object_sizes;
  };
  const Case cases[] = {
      // 0 = {[0,0], [10,10]}, 1 = {[0,4]}: [5,6] is 1 task after object 1's
      // last tensor, but object 0's closed stretch (0,10) holds it.
      {"closed beats a nearer open stretch",
       {{10, 0, 0}, {10, 10, 10}, {9, 0, 4}, {1, 5, 6}}, {0, 0, 1, 0}, {10, 9}},
      // 0 = {[0,0], [10,10]}: stretch (0,10); 1 = {[0,2], [8,10]}: (2,8).
      {"the shortest closed stretch", {{10, 0, 0}, {10, 10, 10}, {9, 0, 2}, {9, 8, 10}, {1, 4, 5}},
       {0, 0, 1, 1, 1}, {10, 9}},
      // 0 = {[0,4]}, 1 = {[0,9]}: [12,12] is 8 after 0 and 3 after 1.
      {"the nearest stretch after an object", {{10, 0, 4}, {9, 0, 9}, {1, 12, 12}}, {0, 1, 1}, {10, 9}},
      // 0 = {[10,20]}, 1 = {[5,20]}: [1,2] is 8 before 0 and 3 before 1.
      {"the nearest stretch before an object", {{10, 10, 20}, {9, 5, 20}, {1, 1, 2}}, {0, 1, 1}, {10, 9}},
      // Both objects have the closed stretch (0,10).
      {"closed ties: lowest object", {{10, 0, 0}, {10, 10, 10}, {9, 0, 0}, {9, 10, 10}, {1, 4, 5}},
       {0, 0, 1, 1, 0}, {10, 9}},
      // [6,6] is 2 after both objects' last tensors.
      {"open ties: lowest object", {{10, 0, 4}, {9, 0, 4}, {1, 6, 6}}, {0, 1, 0}, {10, 9}},
  };
  for (const Case& c : cases) {
    for (const bool reference : {false, true}) {
      PlanParams params;
      params.reference = reference;
      Result<ObjectsPlan> plan = PlanObjects(c.records, ObjectsStrategy::kTightestFit, params);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      EXPECT_EQ(plan->object_of, c.object_of) << c.what << ", reference " << reference;
      EXPECT_EQ(plan->object_sizes, c.object_sizes) << c.what << ", reference " << reference;
    }
  }
}

// What min_cost_flow minimises: a new object costs the tensor's size; reusing
// the object of the tensor before it costs the growth.
internal::Uint128 FlowCost(std::span<const UsageRecord> records, const ObjectsPlan& plan) {
  std::vector<std::size_t> order(records.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(plan.object_of[a], records[a].first_task) <
           std::tie(plan.object_of[b], records[b].first_task);
  });
  internal::Uint128 cost = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const UsageRecord& r = records[order[k]];
    if (k == 0 || plan.object_of[order[k - 1]] != plan.object_of[order[k]]) {
      cost += r.size;
    } else {
      const std::uint64_t before = records[order[k - 1]].size;
      if (r.size > before) cost += r.size - before;
    }
  }
  return cost;
}

TEST(MinCostFlow, WindowedSolverReachesTheOptimalFlowCost) {
  // With windows covering every tensor the windowed solver solves TFLite's
  // whole graph: its flow cost equals the reference's (both optimal).
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const auto records = Mixed(seed, 30 + seed * 5);
    Result<ObjectsPlan> wide = planning::MinCostFlowWindowed(records, {records.size(), records.size()});
    Result<ObjectsPlan> ref = planning::MinCostFlowReference(records);
    ASSERT_TRUE(wide.ok() && ref.ok());
    ASSERT_TRUE(ValidateObjectsPlan(records, *wide).ok());
    EXPECT_TRUE(FlowCost(records, *wide) == FlowCost(records, *ref)) << "seed " << seed;
    // Narrow windows solve a smaller graph: never cheaper than the optimum.
    Result<ObjectsPlan> narrow = planning::MinCostFlowWindowed(records, {2, 1});
    ASSERT_TRUE(narrow.ok());
    ASSERT_TRUE(ValidateObjectsPlan(records, *narrow).ok());
    EXPECT_TRUE(FlowCost(records, *narrow) >= FlowCost(records, *ref)) << "seed " << seed;
  }
}

TEST(MinCostFlow, CostsDoNotOverflowOnHugeTensors) {
  // Reusing a 1-byte tensor's object for a 2^63-byte one costs 2^63 - 1;
  // with int costs (TFLite) these wrap. The optimum here chains a -> b and
  // c -> d: cost 2^63 + 2^63 would overflow 64 bits too.
  const std::uint64_t huge = std::uint64_t{1} << 63;
  std::vector<UsageRecord> records = {{huge, 0, 0}, {huge, 1, 1}, {huge, 0, 0}, {huge, 1, 1}};
  for (bool windowed : {false, true}) {
    Result<ObjectsPlan> plan = windowed ? planning::MinCostFlowWindowed(records, {})
                                        : planning::MinCostFlowReference(records);
    ASSERT_TRUE(plan.ok());
    ASSERT_TRUE(ValidateObjectsPlan(records, *plan).ok());
    EXPECT_EQ(plan->object_sizes.size(), 2u);
  }
}

TEST(MinCostFlow, ReferenceRefusesLargeInputs) {
  PlanParams ref;
  ref.reference = true;
  const auto records = internal::GenerateNetworkRecords(600, 1);
  Result<ObjectsPlan> plan = PlanObjects(records, ObjectsStrategy::kMinCostFlow, ref);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("reference"), std::string::npos);
  EXPECT_TRUE(PlanObjects(records, ObjectsStrategy::kMinCostFlow).ok());
}

TEST(GreedyBest, KeepsBreadthOnlyWhenStrictlySmaller) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto records = Mixed(seed, 200);
    Result<ObjectsPlan> by_size = PlanObjects(records, ObjectsStrategy::kGreedyBySize);
    Result<ObjectsPlan> by_breadth = PlanObjects(records, ObjectsStrategy::kGreedyByBreadth);
    Result<ObjectsPlan> best = PlanObjects(records, ObjectsStrategy::kGreedyBest);
    ASSERT_TRUE(by_size.ok() && by_breadth.ok() && best.ok());
    const bool breadth = TotalSize(*by_breadth) < TotalSize(*by_size);
    EXPECT_EQ(best->object_of, breadth ? by_breadth->object_of : by_size->object_of);
    EXPECT_EQ(best->strategy, breadth ? "greedy_best(greedy_by_breadth)" : "greedy_best(greedy_by_size)");
  }
}

TEST(Best, IsTheCheapestCandidateAndNamesIt) {
  const ObjectsStrategy order[] = {ObjectsStrategy::kTightestFit, ObjectsStrategy::kGreedyBySize,
                                   ObjectsStrategy::kGreedyByBreadth,
                                   ObjectsStrategy::kMinCostFlow, ObjectsStrategy::kGreedyInOrder,
                                   ObjectsStrategy::kEquality, ObjectsStrategy::kNaive};
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto records = Mixed(seed, 250);
    Result<ObjectsPlan> best = PlanObjects(records, ObjectsStrategy::kBest);
    ASSERT_TRUE(best.ok());
    std::uint64_t cheapest = internal::kMaxU64;
    std::string winner;
    for (ObjectsStrategy s : order) {
      Result<ObjectsPlan> plan = PlanObjects(records, s);
      ASSERT_TRUE(plan.ok());
      if (TotalSize(*plan) < cheapest) {
        cheapest = TotalSize(*plan);
        winner = std::string(Name(s));
      }
    }
    EXPECT_EQ(TotalSize(*best), cheapest);
    EXPECT_EQ(best->strategy, "best(" + winner + ")");
  }
}

// A candidate at the lower bound ends best's race (a later one could only
// tie, and ties keep the earlier plan): on a chain of equal tensors (each
// live with the next) tightest_fit, the first candidate, reaches the bound,
// two objects, and best polls about as often as it alone, not as all seven
// candidates.
TEST(Best, StopsAtTheLowerBound) {
  const std::vector<UsageRecord> records = internal::GenerateChainRecords(2'000, 64);
  int alone = 0;
  PlanParams count;
  count.should_stop = [&] { return ++alone < 0; };
  Result<ObjectsPlan> first = PlanObjects(records, ObjectsStrategy::kTightestFit, count);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(TotalSize(*first), ObjectsLowerBound(records));
  ASSERT_GE(alone, 1);
  int polls = 0;
  PlanParams params;
  params.should_stop = [&] { return ++polls < 0; };
  Result<ObjectsPlan> best = PlanObjects(records, ObjectsStrategy::kBest, params);
  ASSERT_TRUE(best.ok()) << best.status().ToString();
  EXPECT_EQ(best->strategy, "best(tightest_fit)");
  EXPECT_EQ(best->object_of, first->object_of);
  // best's own polls: its positional maximums' (computed once, within the
  // limit) and two more (before greedy_in_order and before the first
  // candidate); the six others would poll at least once each.
  int bound_polls = 0;
  internal::Deadline counting(0, [&] { return ++bound_polls < 0; });
  std::vector<std::uint64_t> maxima;
  ASSERT_TRUE(internal::PositionalMaximumsUntil(records, &counting, &maxima));
  EXPECT_EQ(polls, alone + bound_polls + 2);
}

// greedy_in_order runs first, aside: when the time is up before the race
// reaches it, best still returns its plan (it failed instead on 2 x 10^6
// records at the default limit). Here a stop request from the second poll on
// ends the race before its first candidate.
TEST(Best, ReturnsGreedyInOrderWhenTheRaceEndsEarly) {
  const std::vector<UsageRecord> records = internal::GenerateNetworkRecords(3'000, 5);
  int polls = 0;
  PlanParams params;
  params.should_stop = [&] { return ++polls > 1; };
  Result<ObjectsPlan> best = PlanObjects(records, ObjectsStrategy::kBest, params);
  ASSERT_TRUE(best.ok()) << best.status().ToString();
  EXPECT_EQ(best->strategy, "best(greedy_in_order, time limit hit)");
  Result<ObjectsPlan> in_order = PlanObjects(records, ObjectsStrategy::kGreedyInOrder);
  ASSERT_TRUE(in_order.ok());
  EXPECT_EQ(best->object_of, in_order->object_of);
  // The stop came during best's positional maximums: the dispatcher
  // computes the bound for the report instead.
  EXPECT_EQ(best->lower_bound, ObjectsLowerBound(records));
  // A stop request at the first poll skips it too: nothing to return.
  polls = -1;
  params.should_stop = [&] { return ++polls >= 0; };
  EXPECT_EQ(PlanObjects(records, ObjectsStrategy::kBest, params).status().code(),
            StatusCode::kDeadlineExceeded);
}

// ---------------------------------------------------------------- reallocation graph

// The definition, by brute force: an edge root-v when every child of root
// reaches v by one or more edges.
ReallocationGraph BruteForceGraph(const std::vector<std::vector<std::size_t>>& deps) {
  const std::size_t n = deps.size();
  auto reached = [&](std::size_t from) {
    std::vector<char> seen(n, 0);
    std::queue<std::size_t> q;
    for (std::size_t c : deps[from]) q.push(c);
    while (!q.empty()) {
      const std::size_t u = q.front();
      q.pop();
      if (seen[u]) continue;
      seen[u] = 1;
      for (std::size_t c : deps[u]) q.push(c);
    }
    return seen;
  };
  std::vector<std::set<std::size_t>> sets(n);
  for (std::size_t root = 0; root < n; ++root) {
    if (deps[root].empty()) continue;
    for (std::size_t v = 0; v < n; ++v) {
      bool all = v != root;
      for (std::size_t c : deps[root]) all = all && reached(c)[v];
      if (all) {
        sets[root].insert(v);
        sets[v].insert(root);
      }
    }
  }
  ReallocationGraph g(n);
  for (std::size_t v = 0; v < n; ++v) g[v].assign(sets[v].begin(), sets[v].end());
  return g;
}

TEST(ReallocationGraph, MatchesTheDefinitionOnRandomGraphs) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 60; ++round) {
    const std::size_t n = 1 + rng() % 40;
    const bool cyclic = round % 5 == 4;
    std::vector<std::vector<std::size_t>> deps(n);
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t u = 0; u < n; ++u)
        if ((cyclic ? u != t : u > t) && rng() % 8 == 0) deps[t].push_back(u);
    EXPECT_EQ(BuildReallocationGraph(deps), BruteForceGraph(deps)) << "round " << round;
  }
}

TEST(ReallocationGraph, IgnoresOutOfRangeEntriesAndSelfLoops) {
  std::vector<std::vector<std::size_t>> deps = {{1, 1, 99}, {2, 1}, {}};
  EXPECT_EQ(BuildReallocationGraph(deps), (ReallocationGraph{{2}, {}, {0}}));
}

// Consecutive tensors on one object (in task order) must be neighbours.
void ExpectRespectsGraph(std::span<const UsageRecord> records, const ObjectsPlan& plan,
                         const ReallocationGraph& graph) {
  std::vector<std::size_t> order(records.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(plan.object_of[a], records[a].first_task) <
           std::tie(plan.object_of[b], records[b].first_task);
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const std::size_t a = order[k - 1], b = order[k];
    if (plan.object_of[a] != plan.object_of[b]) continue;
    EXPECT_TRUE(std::binary_search(graph[b].begin(), graph[b].end(), a))
        << "tensor " << b << " took the object of " << a << " without an edge";
  }
}

TEST(GreedyInOrderGraph, ChainOfTasks) {
  // Task t writes tensor t, read by task t + 1. Under any parallel order the
  // chain is still a chain, so tensor t may reuse any tensor before t - 1.
  std::vector<std::vector<std::size_t>> deps = {{1}, {2}, {3}, {4}, {5}, {}};
  const ReallocationGraph graph = BuildReallocationGraph(deps);
  std::vector<UsageRecord> records = {{16, 0, 1}, {8, 1, 2}, {64, 2, 3}, {32, 3, 4}, {8, 4, 5}, {8, 5, 6}};
  PlanParams params;
  params.reallocation_graph = &graph;
  for (bool reference : {false, true}) {
    params.reference = reference;
    Result<ObjectsPlan> plan = PlanObjects(records, ObjectsStrategy::kGreedyInOrder, params);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->object_of, (std::vector<std::size_t>{0, 1, 0, 1, 0, 1}));
    EXPECT_EQ(plan->object_sizes, (std::vector<std::uint64_t>{64, 32}));
  }
  // Take away the edge 2-0: tensor 2 cannot reuse tensor 0's object.
  ReallocationGraph cut = graph;
  std::erase(cut[2], 0);
  std::erase(cut[0], 2);
  params.reallocation_graph = &cut;
  Result<ObjectsPlan> plan = PlanObjects(records, ObjectsStrategy::kGreedyInOrder, params);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->object_of, (std::vector<std::size_t>{0, 1, 2, 0, 1, 0}));
  EXPECT_EQ(plan->object_sizes, (std::vector<std::uint64_t>{32, 8, 64}));
}

TEST(GreedyInOrderGraph, EmptyGraphMeansNoReuseAndCompleteGraphMeansNoGraph) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const auto records = Mixed(seed, 120);
    const std::size_t n = records.size();
    ReallocationGraph none(n), all(n);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j) all[i].push_back(j);
    PlanParams params;
    params.reallocation_graph = &none;
    Result<ObjectsPlan> isolated = PlanObjects(records, ObjectsStrategy::kGreedyInOrder, params);
    ASSERT_TRUE(isolated.ok());
    EXPECT_EQ(isolated->object_sizes.size(), n);
    params.reallocation_graph = &all;
    Result<ObjectsPlan> complete = PlanObjects(records, ObjectsStrategy::kGreedyInOrder, params);
    Result<ObjectsPlan> plain = PlanObjects(records, ObjectsStrategy::kGreedyInOrder);
    ASSERT_TRUE(complete.ok() && plain.ok());
    EXPECT_EQ(complete->object_of, plain->object_of);
    EXPECT_EQ(complete->object_sizes, plain->object_sizes);
  }
}

TEST(GreedyInOrderGraph, FastEqualsReferenceAndRespectsTheGraph) {
  std::mt19937_64 rng(11);
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const auto records = Mixed(seed, 40 + seed * 7);
    const std::size_t n = records.size();
    // Random symmetric graphs, sparse to dense, so both scans get used.
    const std::uint64_t density = 1 + seed % 6;
    ReallocationGraph graph(n);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j)
        if (rng() % 8 < density) {
          graph[i].push_back(j);
          graph[j].push_back(i);
        }
    for (auto& adjacent : graph) std::sort(adjacent.begin(), adjacent.end());
    PlanParams fast, ref;
    fast.reallocation_graph = ref.reallocation_graph = &graph;
    ref.reference = true;
    Result<ObjectsPlan> a = PlanObjects(records, ObjectsStrategy::kGreedyInOrder, fast);
    Result<ObjectsPlan> b = PlanObjects(records, ObjectsStrategy::kGreedyInOrder, ref);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->object_of, b->object_of) << "seed " << seed;
    ASSERT_EQ(a->object_sizes, b->object_sizes);
    ExpectSound(records, *a);
    ExpectRespectsGraph(records, *a, graph);
  }
}

TEST(GreedyInOrderGraph, UnsortedInputUsesCallerIndices) {
  const auto sorted = internal::GenerateNetworkRecords(200, 3, 10, 0.3);
  const std::size_t n = sorted.size();
  std::mt19937_64 rng(3);
  ReallocationGraph sorted_graph(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      if (rng() % 3 == 0) {
        sorted_graph[i].push_back(j);
        sorted_graph[j].push_back(i);
      }
  std::vector<std::size_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<std::size_t> where(n);
  for (std::size_t k = 0; k < n; ++k) where[perm[k]] = k;
  std::vector<UsageRecord> shuffled(n);
  ReallocationGraph shuffled_graph(n);
  for (std::size_t k = 0; k < n; ++k) {
    shuffled[k] = sorted[perm[k]];
    for (std::size_t v : sorted_graph[perm[k]]) shuffled_graph[k].push_back(where[v]);
  }  // left unsorted on purpose: the dispatcher sorts each list
  PlanParams a_params, b_params;
  a_params.reallocation_graph = &sorted_graph;
  b_params.reallocation_graph = &shuffled_graph;
  Result<ObjectsPlan> a = PlanObjects(sorted, ObjectsStrategy::kGreedyInOrder, a_params);
  Result<ObjectsPlan> b = PlanObjects(shuffled, ObjectsStrategy::kGreedyInOrder, b_params);
  ASSERT_TRUE(a.ok() && b.ok());
  for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(b->object_of[k], a->object_of[perm[k]]);
}

TEST(GreedyInOrderGraph, BadGraphsAreRejected) {
  std::vector<UsageRecord> records = {{8, 0, 1}, {8, 2, 3}};
  PlanParams params;
  ReallocationGraph wrong_size(3), out_of_range = {{1}, {7}}, fine = {{1}, {0}};
  params.reallocation_graph = &wrong_size;
  EXPECT_EQ(PlanObjects(records, ObjectsStrategy::kGreedyInOrder, params).status().code(),
            StatusCode::kInvalidArgument);
  params.reallocation_graph = &out_of_range;
  EXPECT_EQ(PlanObjects(records, ObjectsStrategy::kGreedyInOrder, params).status().code(),
            StatusCode::kInvalidArgument);
  params.reallocation_graph = &fine;
  EXPECT_TRUE(PlanObjects(records, ObjectsStrategy::kGreedyInOrder, params).ok());
  Result<ObjectsPlan> other = PlanObjects(records, ObjectsStrategy::kEquality, params);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("greedy_in_order only"), std::string::npos);
}

// ---------------------------------------------------------------- extents

std::vector<ExtentRecord> RandomExtents(std::uint64_t seed, std::size_t n, int rank) {
  std::mt19937_64 rng(seed);
  std::vector<ExtentRecord> records;
  for (const UsageRecord& r : internal::GenerateRandomRecords(n, seed, 30, 1)) {
    Extent e;
    e.rank = rank;
    for (int d = 0; d < rank; ++d) e.dims[static_cast<std::size_t>(d)] = 1 + rng() % 4;
    records.push_back({e, r.first_task, r.last_task});
  }
  return records;
}

TEST(ExtentObjects, ValidPlansForEveryRank) {
  for (int rank = 1; rank <= 4; ++rank)
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      const auto records = RandomExtents(seed, 80, rank);
      for (ObjectsStrategy s : {ObjectsStrategy::kNaive, ObjectsStrategy::kEquality,
                                ObjectsStrategy::kGreedyInOrder}) {
        Result<ExtentObjectsPlan> plan = PlanObjects(records, s);
        ASSERT_TRUE(plan.ok()) << plan.status().ToString();
        ASSERT_TRUE(ValidateObjectsPlan(records, *plan).ok());
        if (s == ObjectsStrategy::kEquality) {
          for (std::size_t i = 0; i < records.size(); ++i)
            ASSERT_EQ(plan->object_sizes[plan->object_of[i]], records[i].size);
        }
      }
    }
}

TEST(ExtentObjects, GreedyInOrderNeverGrowsObjects) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const auto records = RandomExtents(seed, 100, 2 + static_cast<int>(seed % 2));
    Result<ExtentObjectsPlan> plan = PlanObjects(records, ObjectsStrategy::kGreedyInOrder);
    ASSERT_TRUE(plan.ok());
    // Every object is the extent of the tensor that created it: the first on it.
    std::vector<bool> seen(plan->object_sizes.size(), false);
    for (std::size_t i = 0; i < records.size(); ++i) {
      const std::size_t o = plan->object_of[i];
      if (!seen[o]) {
        EXPECT_EQ(plan->object_sizes[o], records[i].size);
      }
      seen[o] = true;
      EXPECT_TRUE(plan->object_sizes[o].Covers(records[i].size));
    }
  }
}

TEST(ExtentObjects, OneDimensionalOnlyStrategiesSayWhy) {
  const auto records = RandomExtents(1, 10, 2);
  for (ObjectsStrategy s : {ObjectsStrategy::kGreedyByBreadth, ObjectsStrategy::kGreedyBySize,
                            ObjectsStrategy::kMinCostFlow, ObjectsStrategy::kGreedyBest,
                            ObjectsStrategy::kBest}) {
    Result<ExtentObjectsPlan> plan = PlanObjects(records, s);
    ASSERT_FALSE(plan.ok()) << Name(s);
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find("1-D"), std::string::npos) << plan.status().ToString();
  }
  std::vector<ExtentRecord> mixed = {{Extent{2, 2}, 0, 1}, {Extent{2, 2, 2}, 2, 3}};
  EXPECT_FALSE(PlanObjects(mixed, ObjectsStrategy::kEquality).ok());
  ReallocationGraph graph(records.size());
  PlanParams params;
  params.reallocation_graph = &graph;
  EXPECT_FALSE(PlanObjects(records, ObjectsStrategy::kGreedyInOrder, params).ok());
}

// greedy_by_size's work budget grows with the time limit: 16,000 tensors
// with disjoint lifetimes (each placement brings every later tensor closer,
// 1.3e8 improvements of 12 units) need about 1.5e9 units, more than the 4e8
// of the default 10 s and less than the 4e9 of 100 s and more. Units of
// work, not time: the same on any machine (the limits are far above what the
// runs take, except in slow sanitizer builds, where the first run may stop at
// its deadline instead).
TEST(GreedyBySize, TheWorkBudgetGrowsWithTheTimeLimit) {
  std::vector<UsageRecord> records;
  for (int i = 0; i < 16'000; ++i)
    records.push_back({std::uint64_t{64} * (1 + static_cast<std::uint64_t>(i * 7919) % 97),
                       static_cast<TaskIndex>(2 * i), static_cast<TaskIndex>(2 * i)});
  PlanParams params;
  params.time_limit_seconds = 10;
  Result<ObjectsPlan> cut = PlanObjects(records, ObjectsStrategy::kGreedyBySize, params);
  ASSERT_FALSE(cut.ok());
  if (cut.status().code() == StatusCode::kResourceExhausted)
    EXPECT_NE(cut.status().message().find("a time limit above 10 s allows"), std::string::npos)
        << cut.status().message();
  else
    EXPECT_EQ(cut.status().code(), StatusCode::kDeadlineExceeded) << cut.status().ToString();
  params.time_limit_seconds = 1000;  // 10x, the most
  Result<ObjectsPlan> plan = PlanObjects(records, ObjectsStrategy::kGreedyBySize, params);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->object_sizes.size(), 1u);  // disjoint: one object holds them all
}

// The time limit covers the objects strategies too (counted in polls of
// should_stop, never in seconds).
TEST(ObjectsDeadline, AStopRequestEndsTheIteratingStrategies) {
  const std::vector<UsageRecord> records = internal::GenerateNetworkRecords(30'000, 7);
  // equality is O(n log n) but took seconds at 10^6 tensors without reading
  // the limit.
  for (ObjectsStrategy s : {ObjectsStrategy::kGreedyBySize, ObjectsStrategy::kGreedyByBreadth,
                            ObjectsStrategy::kMinCostFlow, ObjectsStrategy::kGreedyBest,
                            ObjectsStrategy::kEquality, ObjectsStrategy::kBest}) {
    int polls = 0;
    PlanParams params;
    params.should_stop = [&] { return ++polls > 0; };
    Result<ObjectsPlan> plan = PlanObjects(records, s, params);
    ASSERT_EQ(plan.status().code(), StatusCode::kDeadlineExceeded)
        << Name(s) << ": " << plan.status().ToString();
    EXPECT_EQ(polls, 1) << Name(s);
    EXPECT_NE(plan.status().message().find("stop request"), std::string::npos)
        << plan.status().message();
  }
  // Without a stop request every one of them plans this input.
  for (ObjectsStrategy s : {ObjectsStrategy::kGreedyBySize, ObjectsStrategy::kEquality,
                            ObjectsStrategy::kBest}) {
    int polls = 0;
    PlanParams params;
    params.should_stop = [&] { return ++polls < 0; };
    EXPECT_TRUE(PlanObjects(records, s, params).ok()) << Name(s);
    EXPECT_GE(polls, 1) << Name(s);
  }
}

// The polls of a strategy before its first unit of work: a stop request at
// poll k ends it "after 0 steps" exactly when k is at most that many (found
// by bisection; each try runs the set-up again).
int SetUpPolls(std::span<const UsageRecord> records, ObjectsStrategy s) {
  auto ends_in_set_up = [&](int stop_at) {
    int polls = 0;
    PlanParams params;
    params.should_stop = [&] { return ++polls >= stop_at; };
    Result<ObjectsPlan> plan = PlanObjects(records, s, params);
    EXPECT_EQ(plan.status().code(), StatusCode::kDeadlineExceeded) << Name(s);
    return plan.status().message().find("after 0 steps") != std::string::npos;
  };
  int lo = 0, hi = 1;  // ends_in_set_up(lo) (vacuously for 0), !ends_in_set_up(hi)
  while (ends_in_set_up(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (ends_in_set_up(mid) ? lo : hi) = mid;
  }
  return lo;
}

// The set-ups read the limit too (sorts, the positional maximums, the
// breadth order): at 10^6 records they took 1-2 s, past a short limit. Each
// polls at least as often as the building blocks it runs do alone.
TEST(ObjectsDeadline, TheSetUpsReadTheStopRequest) {
  const std::vector<UsageRecord> records = internal::GenerateNetworkRecords(50'000, 3);
  auto polls_of = [](auto&& run) {
    int polls = 0;
    internal::Deadline counting(0, [&] { return ++polls < 0; });
    EXPECT_TRUE(run(&counting));
    return polls;
  };
  const int sort = polls_of([&](internal::Deadline* d) {
    std::vector<std::pair<TaskIndex, std::size_t>> keys(records.size());
    return internal::StableSortUntil(keys, std::less<>(), d);
  });
  const int maxima = polls_of([&](internal::Deadline* d) {
    std::vector<std::uint64_t> m;
    return internal::PositionalMaximumsUntil(records, d, &m);
  });
  const int breadth = polls_of(
      [&](internal::Deadline* d) { return planning::BreadthOrder(records, d).has_value(); });
  ASSERT_GT(sort, 4);
  // The positional maximums, then the two task orders.
  EXPECT_GE(SetUpPolls(records, ObjectsStrategy::kGreedyBySize), maxima + 2 * sort);
  EXPECT_GE(SetUpPolls(records, ObjectsStrategy::kGreedyByBreadth), breadth);
  // The last-task order, then the placement order.
  EXPECT_GE(SetUpPolls(records, ObjectsStrategy::kTightestFit), 2 * sort);
  // The offsets greedy_by_breadth shares the breadth order.
  int polls = 0;
  PlanParams params;
  params.should_stop = [&] { return ++polls >= 3; };
  Result<OffsetsPlan> plan =
      PlanOffsets(FromRecords(records), OffsetsStrategy::kGreedyByBreadth, params);
  ASSERT_EQ(plan.status().code(), StatusCode::kDeadlineExceeded) << plan.status().ToString();
  EXPECT_EQ(polls, 3);
  EXPECT_NE(plan.status().message().find("after placing 0 of"), std::string::npos)
      << plan.status().message();
}

// greedy_by_size runs its quadratic transcription when a quarter of the
// tensors are live at once; it read no limit. A stop request at the first
// poll after the set-up's now ends it after some steps.
TEST(ObjectsDeadline, GreedyBySizeTranscriptionReadsTheStopRequest) {
  const std::vector<UsageRecord> records =
      internal::GenerateRandomRecords(6'000, 11, /*num_tasks=*/60, /*max_size=*/1 << 20);
  ASSERT_GE(4 * MaxLiveTensors(records), records.size());  // the transcription's inputs
  const int set_up = SetUpPolls(records, ObjectsStrategy::kGreedyBySize);
  int polls = 0;
  PlanParams params;
  params.should_stop = [&] { return ++polls > set_up; };
  Result<ObjectsPlan> plan = PlanObjects(records, ObjectsStrategy::kGreedyBySize, params);
  ASSERT_EQ(plan.status().code(), StatusCode::kDeadlineExceeded) << plan.status().ToString();
  EXPECT_EQ(polls, set_up + 1);
  EXPECT_EQ(plan.status().message().find("after 0 steps"), std::string::npos)
      << plan.status().message();
  // Without a stop request it plans the input (untimed: a sanitizer build
  // takes longer than the default limit).
  PlanParams untimed;
  untimed.time_limit_seconds = 0;
  EXPECT_TRUE(PlanObjects(records, ObjectsStrategy::kGreedyBySize, untimed).ok());
}

// A strategy that gives up suggests the near-linear ones, never itself.
TEST(WorkBudget, GivingUpSuggestsTheOthers) {
  for (const char* strategy : {"min_cost_flow", "tightest_fit", "greedy_in_order (reallocation graph)",
                               "greedy_by_size"}) {
    planning::WorkBudget budget(1);
    budget.Spend(2);
    ASSERT_TRUE(budget.Exhausted());
    const Status st = budget.Error(strategy, 7);
    EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
    const std::string& m = st.message();
    const std::string name = std::string(strategy).substr(0, std::string(strategy).find(' '));
    const std::size_t open = m.rfind('(');
    ASSERT_NE(open, std::string::npos) << m;
    EXPECT_EQ(m.find(name, open), std::string::npos) << m;
    EXPECT_NE(m.find("equality", open), std::string::npos) << m;
    EXPECT_TRUE(m.starts_with(std::string(strategy) + " gave up after 1 steps on 7 tensors")) << m;
  }
}

}  // namespace
}  // namespace tensormem
