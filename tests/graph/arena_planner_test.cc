// SPDX-License-Identifier: Apache-2.0
// PlanGraph: both arenas, every strategy, per-tensor alignment, re-planning
// from a node, and the plan validator.
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/graph_test_util.h"
#include "planning/offsets/best_fit.h"
#include "tensormem/graph.h"
#include "tensormem/lower_bounds.h"

namespace tensormem {
namespace {

using testing::AddNode;
using testing::MakeChain;
using testing::MakeGraph;
using testing::MakeRandomGraph;

TEST(PlanGraph, ChainReusesMemory) {
  Graph g = MakeChain(6, 1000);
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // Input (never freed) + two alternating buffers + the output.
  EXPECT_EQ(plan->scratch.buffers.size(), 6u);
  EXPECT_LE(plan->scratch_bytes(), 4u * 1024);
  EXPECT_EQ(plan->scratch_plan.strategy, "arena");
  EXPECT_EQ(plan->scratch_plan.lower_bound, PeakLiveBytes(plan->scratch));
  EXPECT_EQ(plan->naive_scratch_bytes, 5 * 1024u + 1000);  // each aligned to 64
  EXPECT_EQ(plan->persistent_bytes, 0u);
  for (const TensorPlacement& p : plan->placements) EXPECT_EQ(p.offset % 64, 0u);
  EXPECT_TRUE(ValidateGraphPlan(g, *plan).ok());
}

TEST(PlanGraph, PersistentArenaHoldsConstantsBackToBack) {
  Graph g = MakeGraph(5, 10);
  g.tensors[1].kind = TensorKind::kConstant;
  g.tensors[2].kind = TensorKind::kVariable;
  g.tensors[2].alignment = 256;
  g.inputs = {0};
  g.outputs = {4};
  AddNode(g, {0, 1, 2}, {3});
  AddNode(g, {3, 1}, {4});
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->placements[1].arena, Arena::kPersistent);
  EXPECT_EQ(plan->placements[1].offset, 0u);
  EXPECT_EQ(plan->placements[2].offset, 256u);
  EXPECT_EQ(plan->persistent_bytes, 266u);
  EXPECT_EQ(plan->base_alignment, 256u);
  EXPECT_EQ(plan->scratch.buffers.size(), 3u);
}

TEST(PlanGraph, InPlaceChainIsOneBufferWithTheStrictestAlignment) {
  Graph g = MakeGraph(5, 96);
  g.inputs = {0};
  g.outputs = {4};
  g.tensors[2].alignment = 512;
  AddNode(g, {0}, {1});
  AddNode(g, {1}, {2}, {}, InPlace::kInput0Unmodified);
  AddNode(g, {2}, {3}, {}, InPlace::kInput0);
  AddNode(g, {3}, {4});
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->placements[1].buffer, plan->placements[2].buffer);
  EXPECT_EQ(plan->placements[1].buffer, plan->placements[3].buffer);
  EXPECT_EQ(plan->placements[3].offset, plan->placements[1].offset);
  EXPECT_EQ(plan->scratch.buffers[static_cast<std::size_t>(plan->placements[1].buffer)].alignment, 512u);
  EXPECT_EQ(plan->placements[1].offset % 512, 0u);
  // The naive total is the naive strategy's arena: the chain counted once.
  GraphPlanParams naive;
  naive.strategy = OffsetsStrategy::kNaive;
  Result<GraphPlan> naive_plan = PlanGraph(g, naive);
  ASSERT_TRUE(naive_plan.ok());
  EXPECT_EQ(plan->naive_scratch_bytes, naive_plan->scratch_bytes());
  EXPECT_EQ(plan->naive_scratch_bytes, 640u + 96);  // tensor 0 at 0, the chain at 512, tensor 4 at 640
}

TEST(PlanGraph, EveryStrategyOnRandomGraphs) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Graph g = MakeRandomGraph(seed, 10 + static_cast<int>(seed % 30));
    for (OffsetsStrategy s : AllOffsetsStrategies()) {
      GraphPlanParams p;
      p.strategy = s;
      p.offsets.time_limit_seconds = 0.05;
      Result<GraphPlan> plan = PlanGraph(g, p);
      if (plan.status().code() == StatusCode::kUnimplemented) continue;
      ASSERT_TRUE(plan.ok()) << "seed " << seed << " " << Name(s) << ": " << plan.status().ToString();
      ASSERT_TRUE(ValidateGraphPlan(g, *plan).ok());
      EXPECT_GE(plan->scratch_bytes(), plan->scratch_plan.lower_bound);
      EXPECT_LE(plan->scratch_plan.lower_bound, plan->naive_scratch_bytes);
    }
  }
}

TEST(PlanGraph, RejectsBadParams) {
  GraphPlanParams p;
  p.alignment = 48;
  EXPECT_EQ(PlanGraph(MakeChain(3, 8), p).status().code(), StatusCode::kInvalidArgument);
  p.alignment = 0;
  EXPECT_FALSE(PlanGraph(MakeChain(3, 8), p).ok());
}

TEST(ValidateGraphPlan, CatchesTamperedPlans) {
  Graph g = MakeChain(4, 100);
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  GraphPlan bad = *plan;
  bad.placements[2].offset += 64;  // disagrees with its buffer
  EXPECT_FALSE(ValidateGraphPlan(g, bad).ok());
  bad = *plan;
  bad.scratch_plan.offsets[1] = bad.scratch_plan.offsets[2];  // two live buffers overlap
  bad.placements[1].offset = bad.scratch_plan.offsets[1];
  EXPECT_FALSE(ValidateGraphPlan(g, bad).ok());
  bad = *plan;
  bad.placements.pop_back();
  EXPECT_FALSE(ValidateGraphPlan(g, bad).ok());
}

TEST(ReplanGraphFrom, KeepsEarlierTensorsAndPlacesTheRest) {
  Graph g = MakeChain(8, 256);
  Result<GraphPlan> first = PlanGraph(g);
  ASSERT_TRUE(first.ok());
  // Tensors written from node 4 on grow.
  Graph grown = g;
  for (std::size_t t = 5; t < 8; ++t) grown.tensors[t].bytes = 4096;
  Result<GraphPlan> again = ReplanGraphFrom(grown, *first, 4);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  for (std::size_t t = 0; t < 5; ++t)
    EXPECT_EQ(again->placements[t].offset, first->placements[t].offset) << t;
  EXPECT_TRUE(ValidateGraphPlan(grown, *again).ok());
  EXPECT_GT(again->scratch_bytes(), first->scratch_bytes());
  // From node 0 it is a fresh plan.
  Result<GraphPlan> fresh = ReplanGraphFrom(grown, *first, 0);
  Result<GraphPlan> direct = PlanGraph(grown);
  ASSERT_TRUE(fresh.ok() && direct.ok());
  EXPECT_EQ(fresh->scratch_plan.offsets, direct->scratch_plan.offsets);
}

TEST(ReplanGraphFrom, RefusesWhenAKeptTensorChanged) {
  Graph g = MakeChain(6, 256);
  Result<GraphPlan> first = PlanGraph(g);
  ASSERT_TRUE(first.ok());
  Graph grown = g;
  grown.tensors[2].bytes = 9999;  // written by node 1
  Result<GraphPlan> again = ReplanGraphFrom(grown, *first, 3);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("re-plan from node 1 or earlier"), std::string::npos)
      << again.status().message();
  EXPECT_TRUE(ReplanGraphFrom(grown, *first, 1).ok());
  EXPECT_FALSE(ReplanGraphFrom(grown, *first, -1).ok());
  EXPECT_FALSE(ReplanGraphFrom(MakeChain(3, 8), *first, 1).ok());  // another graph
}

TEST(ReplanGraphFrom, WorksWithEveryStrategy) {
  const Graph g = MakeRandomGraph(99, 40);
  Result<GraphPlan> first = PlanGraph(g);
  ASSERT_TRUE(first.ok());
  for (OffsetsStrategy s : {OffsetsStrategy::kArena, OffsetsStrategy::kGreedyBySize,
                            OffsetsStrategy::kGreedyByBreadth, OffsetsStrategy::kBest}) {
    GraphPlanParams p;
    p.strategy = s;
    Result<GraphPlan> again = ReplanGraphFrom(g, *first, 20, p);
    ASSERT_TRUE(again.ok()) << Name(s) << ": " << again.status().ToString();
    for (std::size_t b = 0; b < again->scratch.buffers.size(); ++b) {
      if (again->scratch.buffers[b].first_task >= 20) continue;
      const int t = again->scratch_owner[b];
      EXPECT_EQ(again->placements[static_cast<std::size_t>(t)].offset,
                first->placements[static_cast<std::size_t>(t)].offset);
    }
  }
}

}  // namespace
}  // namespace tensormem

namespace tensormem {
namespace {

// Issue 12 item 16: the graph planner's arena is the dispatcher's `arena`
// (one implementation). Reference: ArenaPlanner's order computed from the
// graph (allocated at node 0 and never freed first, by tensor index; then
// size descending, earlier allocation, index), fed to the same best fit.
TEST(PlanGraphHardening, ArenaIsTheDispatchersArenaInTfliteGraphOrder) {
  int graphs = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const Graph g = MakeRandomGraph(seed, 5 + static_cast<int>(seed % 60));
    Result<GraphPlan> plan = PlanGraph(g);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    const Problem& problem = plan->scratch;
    const std::vector<int>& owner = plan->scratch_owner;
    std::vector<std::size_t> order(problem.buffers.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto whole_run = [&](std::size_t b) {
      const TensorLiveness& l = plan->liveness.tensors[static_cast<std::size_t>(owner[b])];
      return l.first_node == 0 && l.never_freed;
    };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const bool wa = whole_run(a), wb = whole_run(b);
      if (wa || wb) return wa != wb ? wa : owner[a] < owner[b];
      const std::uint64_t sa = g.tensors[static_cast<std::size_t>(owner[a])].bytes;
      const std::uint64_t sb = g.tensors[static_cast<std::size_t>(owner[b])].bytes;
      if (sa != sb) return sa > sb;
      if (problem.buffers[a].first_task != problem.buffers[b].first_task)
        return problem.buffers[a].first_task < problem.buffers[b].first_task;
      return owner[a] < owner[b];
    });
    Result<OffsetsPlan> reference = planning::PlaceBestFit(problem, order, 1);
    ASSERT_TRUE(reference.ok());
    EXPECT_EQ(plan->scratch_plan.offsets, reference->offsets) << "seed " << seed;
    ++graphs;
  }
  EXPECT_EQ(graphs, 300);
}

// Issue 12 item 17: GraphPlanParams.offsets.alignment was silently ignored;
// the graph's alignment is GraphPlanParams.alignment (and each tensor's).
TEST(PlanGraphHardening, OffsetsAlignmentIsRefusedNotIgnored) {
  GraphPlanParams p;
  p.offsets.alignment = 256;
  Result<GraphPlan> plan = PlanGraph(MakeChain(3, 8), p);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("GraphPlanParams::alignment"), std::string::npos);
}

}  // namespace
}  // namespace tensormem
