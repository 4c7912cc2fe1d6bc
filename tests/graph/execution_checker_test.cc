// SPDX-License-Identifier: Apache-2.0
// The execution checker passes every valid plan and catches every plan that
// lets a live tensor be overwritten, naming the node and both tensors.
#include <gtest/gtest.h>

#include "graph/graph_test_util.h"
#include "tensormem/graph.h"

namespace tensormem {
namespace {

using testing::AddNode;
using testing::MakeChain;
using testing::MakeGraph;
using testing::MakeRandomGraph;

Status RunChecked(const Graph& g, const GraphPlan& plan, bool full) {
  CommittedArenas arenas;
  TM_RETURN_IF_ERROR(arenas.Commit(plan));
  Result<ExecutionReport> r = CheckExecution(g, plan, arenas, {.full = full});
  return r.ok() ? Status::Ok() : r.status();
}

TEST(ExecutionChecker, PassesValidPlansOfRandomGraphs) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const Graph g = MakeRandomGraph(seed, 5 + static_cast<int>(seed % 40));
    for (OffsetsStrategy s : {OffsetsStrategy::kArena, OffsetsStrategy::kGreedyBySize,
                              OffsetsStrategy::kGreedyByBreadth, OffsetsStrategy::kNaive}) {
      for (bool preserve : {false, true}) {
        GraphPlanParams p;
        p.strategy = s;
        p.liveness.preserve_all_tensors = preserve;
        Result<GraphPlan> plan = PlanGraph(g, p);
        ASSERT_TRUE(plan.ok()) << plan.status().ToString();
        for (bool full : {false, true}) {
          Status st = RunChecked(g, *plan, full);
          ASSERT_TRUE(st.ok()) << "seed " << seed << " " << Name(s) << ": " << st.ToString();
        }
      }
    }
  }
}

TEST(ExecutionChecker, ReportsWhatItDid) {
  Graph g = MakeChain(5, 256);
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  CommittedArenas arenas;
  ASSERT_TRUE(arenas.Commit(*plan).ok());
  Result<ExecutionReport> r = CheckExecution(g, *plan, arenas, {.full = true});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nodes_run, 4u);
  EXPECT_EQ(r->tensors_written, 5u);
  EXPECT_EQ(r->bytes_written, 5u * 256);
  EXPECT_GE(r->tensor_reads_checked, 9u);  // each input twice, plus the output
}

// Moves tensor `victim` onto tensor `onto`'s memory without telling anyone.
GraphPlan Overlap(const GraphPlan& plan, int victim, int onto) {
  GraphPlan bad = plan;
  bad.placements[static_cast<std::size_t>(victim)].offset =
      plan.placements[static_cast<std::size_t>(onto)].offset;
  return bad;
}

TEST(ExecutionChecker, CatchesAnOverwrittenLiveTensor) {
  // 0 -> 1 -> 2 -> 3, and node 2 reads 1 again: 1 lives across node 1's write of 2.
  Graph g = MakeGraph(4, 256);
  g.inputs = {0};
  g.outputs = {3};
  AddNode(g, {0}, {1});
  AddNode(g, {1}, {2});
  AddNode(g, {2, 1}, {3});
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  for (bool full : {false, true}) {
    Status st = RunChecked(g, Overlap(*plan, 2, 1), full);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("node 1"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("tensor 't1'"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("by tensor 't2'"), std::string::npos) << st.message();
  }
}

TEST(ExecutionChecker, CatchesPartialOverlapsAndOutputsOverInputs) {
  Graph g = MakeChain(4, 1000);
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  // Output of node 1 starting 64 bytes into its own input (not an in-place node).
  GraphPlan bad = *plan;
  bad.placements[2].offset = plan->placements[1].offset + 64;
  Status st = RunChecked(g, bad, false);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("still reading"), std::string::npos) << st.message();
  // A temporary over an input of its node.
  Graph t = MakeChain(4, 1000);
  t.tensors.push_back({"tmp", 128});
  t.nodes[2].temporaries = {4};
  Result<GraphPlan> tp = PlanGraph(t);
  ASSERT_TRUE(tp.ok());
  bad = *tp;
  bad.placements[4].offset = tp->placements[2].offset + 896;
  EXPECT_FALSE(RunChecked(t, bad, false).ok());
  // Two persistent tensors on top of each other.
  Graph w = MakeChain(3, 64);
  w.tensors.push_back({"w1", 64, TensorKind::kConstant});
  w.tensors.push_back({"w2", 64, TensorKind::kConstant});
  w.nodes[1].inputs = {1, 3, 4};
  Result<GraphPlan> wp = PlanGraph(w);
  ASSERT_TRUE(wp.ok());
  st = RunChecked(w, Overlap(*wp, 4, 3), false);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'w1'"), std::string::npos) << st.message();
}

TEST(ExecutionChecker, NeedsCommittedMemory) {
  Graph g = MakeChain(3, 64);
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  CommittedArenas arenas;
  EXPECT_EQ(CheckExecution(g, *plan, arenas).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(arenas.Commit(*plan).ok());
  arenas.ReleaseScratch();
  EXPECT_EQ(CheckExecution(g, *plan, arenas).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CheckExecution(MakeChain(5, 64), *plan, arenas).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tensormem
