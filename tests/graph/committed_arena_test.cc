// SPDX-License-Identifier: Apache-2.0
// CommittedArenas: aligned blocks, pointers = base + offset, growing keeps
// the contents, never shrinking, release and re-acquire keeping the plan.
#include <cstring>

#include <gtest/gtest.h>

#include "graph/graph_test_util.h"
#include "tensormem/graph.h"

namespace tensormem {
namespace {

using testing::MakeChain;

TEST(CommittedArenas, ResolvesBasePlusOffset) {
  Graph g = MakeChain(5, 300);
  g.tensors.push_back({"w", 100, TensorKind::kConstant});
  g.nodes[0].inputs.push_back(5);
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  CommittedArenas arenas;
  EXPECT_EQ(arenas.Resolve(0), nullptr);  // nothing committed
  ASSERT_TRUE(arenas.Commit(*plan).ok());
  EXPECT_GE(arenas.capacity(Arena::kScratch), plan->scratch_bytes());
  EXPECT_EQ(arenas.capacity(Arena::kPersistent), 100u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(arenas.base(Arena::kScratch)) % 64, 0u);
  for (int t = 0; t < 5; ++t)
    EXPECT_EQ(arenas.Resolve(t), arenas.base(Arena::kScratch) + plan->placements[static_cast<std::size_t>(t)].offset);
  EXPECT_EQ(arenas.Resolve(5), arenas.base(Arena::kPersistent));
  EXPECT_EQ(arenas.Resolve(6), nullptr);
  EXPECT_EQ(arenas.Resolve(-1), nullptr);
  EXPECT_EQ(arenas.reallocations(Arena::kScratch), 1);
}

TEST(CommittedArenas, ZeroByteArenasAllocateNothing) {
  Graph g = MakeChain(3, 0);
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  CommittedArenas arenas;
  ASSERT_TRUE(arenas.Commit(*plan).ok());
  EXPECT_EQ(arenas.base(Arena::kScratch), nullptr);
  EXPECT_EQ(arenas.reallocations(Arena::kScratch), 0);
  EXPECT_EQ(arenas.Resolve(1), nullptr);
}

TEST(CommittedArenas, GrowsKeepingContentsAndNeverShrinks) {
  Graph g = MakeChain(8, 1024);
  Result<GraphPlan> first = PlanGraph(g);
  ASSERT_TRUE(first.ok());
  CommittedArenas arenas;
  ASSERT_TRUE(arenas.Commit(*first).ok());
  // Tensor 2 (written at node 1) holds data while later sizes change.
  std::memset(arenas.Resolve(2), 0x5a, 1024);
  Graph grown = g;
  for (std::size_t t = 4; t < 8; ++t) grown.tensors[t].bytes = 64 * 1024;
  Result<GraphPlan> second = ReplanGraphFrom(grown, *first, 3);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_TRUE(arenas.Commit(*second).ok());
  EXPECT_EQ(arenas.reallocations(Arena::kScratch), 2);
  EXPECT_GE(arenas.capacity(Arena::kScratch), second->scratch_bytes());
  const std::byte* p = arenas.Resolve(2);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(p[i], std::byte{0x5a}) << i;
  // A smaller plan fits: no reallocation, no shrinking.
  const std::uint64_t cap = arenas.capacity(Arena::kScratch);
  ASSERT_TRUE(arenas.Commit(*first).ok());
  EXPECT_EQ(arenas.reallocations(Arena::kScratch), 2);
  EXPECT_EQ(arenas.capacity(Arena::kScratch), cap);
}

TEST(CommittedArenas, ReleaseAndReacquireKeepThePlan) {
  Graph g = MakeChain(6, 512);
  g.tensors.push_back({"w", 64, TensorKind::kConstant});
  g.nodes[2].inputs.push_back(6);
  Result<GraphPlan> plan = PlanGraph(g);
  ASSERT_TRUE(plan.ok());
  CommittedArenas arenas;
  ASSERT_TRUE(arenas.Commit(*plan).ok());
  arenas.ReleaseScratch();
  EXPECT_EQ(arenas.Resolve(1), nullptr);
  EXPECT_EQ(arenas.capacity(Arena::kScratch), 0u);
  EXPECT_NE(arenas.Resolve(6), nullptr);  // the persistent arena stays
  ASSERT_TRUE(arenas.AcquireScratch().ok());
  EXPECT_GE(arenas.capacity(Arena::kScratch), plan->scratch_bytes());
  EXPECT_EQ(arenas.Resolve(3), arenas.base(Arena::kScratch) + plan->placements[3].offset);
  EXPECT_TRUE(CheckExecution(g, *plan, arenas).ok());
  // Moving hands the memory over.
  CommittedArenas moved = std::move(arenas);
  EXPECT_NE(moved.Resolve(3), nullptr);
  EXPECT_EQ(arenas.Resolve(3), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  moved.Release();
  EXPECT_EQ(moved.Resolve(6), nullptr);
}

}  // namespace
}  // namespace tensormem
