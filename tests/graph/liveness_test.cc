// SPDX-License-Identifier: Apache-2.0
// Liveness by reference counting (TFLite ArenaPlanner semantics) and the
// graph's structural check.
#include <gtest/gtest.h>

#include "graph/graph_test_util.h"
#include "tensormem/graph.h"

namespace tensormem {
namespace {

using testing::AddNode;
using testing::MakeChain;
using testing::MakeGraph;

TEST(Liveness, ChainFreesAfterLastReader) {
  Graph g = MakeChain(5, 100);
  Result<Liveness> l = ComputeLiveness(g);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  // Input: node 0, never freed. Intermediates: writer .. last reader. Output: never freed.
  EXPECT_EQ(l->tensors[0].first_node, 0);
  EXPECT_TRUE(l->tensors[0].never_freed);
  EXPECT_EQ(l->tensors[0].last_node, 3);
  EXPECT_EQ(l->tensors[1].first_node, 0);
  EXPECT_EQ(l->tensors[1].last_node, 1);
  EXPECT_FALSE(l->tensors[1].never_freed);
  EXPECT_EQ(l->tensors[4].first_node, 3);
  EXPECT_TRUE(l->tensors[4].never_freed);
  for (const TensorLiveness& t : l->tensors) EXPECT_EQ(t.arena, Arena::kScratch);
}

TEST(Liveness, ConstantsAndVariablesArePersistent) {
  Graph g = MakeGraph(4, 16);
  g.tensors[1].kind = TensorKind::kConstant;
  g.tensors[2].kind = TensorKind::kVariable;
  g.inputs = {0};
  g.outputs = {3};
  AddNode(g, {0, 1, 2}, {3});
  Result<Liveness> l = ComputeLiveness(g);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->tensors[1].arena, Arena::kPersistent);
  EXPECT_EQ(l->tensors[2].arena, Arena::kPersistent);
  EXPECT_TRUE(l->tensors[2].never_freed);
}

TEST(Liveness, DynamicZeroByteAndUnwrittenTensorsAreNotPlanned) {
  Graph g = MakeGraph(5, 8);
  g.tensors[1].kind = TensorKind::kDynamic;
  g.tensors[2].bytes = 0;
  g.inputs = {0};
  g.outputs = {3};
  AddNode(g, {0, 4}, {1, 2});
  AddNode(g, {1, 2}, {3});
  Result<Liveness> l = ComputeLiveness(g);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->tensors[1].arena, Arena::kNone);
  EXPECT_EQ(l->tensors[1].unplanned_reason, "dynamic");
  EXPECT_EQ(l->tensors[2].unplanned_reason, "zero bytes");
  EXPECT_EQ(l->tensors[4].unplanned_reason, "never written");
}

TEST(Liveness, TemporariesLiveInsideTheirNode) {
  Graph g = MakeChain(3, 8);
  g.tensors.push_back({"tmp", 32});
  g.nodes[1].temporaries = {3};
  Result<Liveness> l = ComputeLiveness(g);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->tensors[3].first_node, 1);
  EXPECT_EQ(l->tensors[3].last_node, 1);
}

TEST(Liveness, UnreadTensorsDieAtTheirWriterUnlessKept) {
  Graph g = MakeChain(3, 8);
  g.tensors.push_back({"unread", 8});
  g.nodes[0].outputs.push_back(3);
  Result<Liveness> l = ComputeLiveness(g);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->tensors[3].last_node, 0);
  LivenessParams keep;
  keep.keep_unread_tensors = true;  // TFLite: never freed
  l = ComputeLiveness(g, keep);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->tensors[3].never_freed);
}

TEST(Liveness, PreserveAllTensorsFreesNothing) {
  Graph g = MakeChain(4, 8);
  g.nodes[1].in_place = InPlace::kInput0;
  LivenessParams p;
  p.preserve_all_tensors = true;
  Result<Liveness> l = ComputeLiveness(g, p);
  ASSERT_TRUE(l.ok());
  for (std::size_t t = 0; t < 4; ++t) {
    EXPECT_TRUE(l->tensors[t].never_freed) << t;
    EXPECT_EQ(l->tensors[t].root, static_cast<int>(t));
  }
  EXPECT_EQ(l->in_place_shared, 0u);
}

TEST(Liveness, InPlaceChainSharesOneBufferUntilTheLastReader) {
  // 0 -> [n0] 1 -> [n1 in place] 2 -> [n2 in place] 3 -> [n3] 4, and node 4 reads 3 again.
  Graph g = MakeGraph(6, 64);
  g.inputs = {0};
  g.outputs = {5};
  AddNode(g, {0}, {1});
  AddNode(g, {1}, {2}, {}, InPlace::kInput0);
  AddNode(g, {2}, {3}, {}, InPlace::kInput0Unmodified);
  AddNode(g, {3}, {4});
  AddNode(g, {4, 3}, {5});
  Result<Liveness> l = ComputeLiveness(g);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->tensors[2].root, 1);
  EXPECT_EQ(l->tensors[3].root, 1);
  EXPECT_EQ(l->tensors[1].first_node, 0);
  EXPECT_EQ(l->tensors[1].last_node, 4);  // 3's last reader
  EXPECT_EQ(l->in_place_shared, 2u);
}

TEST(Liveness, InPlaceNeedsTheInputToDieHere) {
  Graph g = MakeGraph(4, 64);
  g.inputs = {0};
  g.outputs = {3};
  AddNode(g, {0}, {1});
  AddNode(g, {1}, {2}, {}, InPlace::kInput0);
  AddNode(g, {1, 2}, {3});  // 1 is still read: no sharing
  Result<Liveness> l = ComputeLiveness(g);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->tensors[2].root, 2);
}

TEST(Liveness, InPlaceRules) {
  auto shared = [](Graph g) {
    Result<Liveness> l = ComputeLiveness(g);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() && l->tensors[2].root == 1;
  };
  Graph base = MakeGraph(4, 64);
  base.inputs = {0};
  base.outputs = {3};
  AddNode(base, {0}, {1});
  AddNode(base, {1}, {2}, {}, InPlace::kInput0);
  AddNode(base, {2}, {3});
  EXPECT_TRUE(shared(base));
  Graph sizes = base;
  sizes.tensors[2].bytes = 32;  // kInput0 needs equal sizes
  EXPECT_FALSE(shared(sizes));
  sizes.nodes[1].in_place = InPlace::kInput0Unmodified;  // a reshape: the output fits
  EXPECT_TRUE(shared(sizes));
  sizes.tensors[2].bytes = 128;  // ... but not a larger one
  EXPECT_FALSE(shared(sizes));
  Graph output = base;
  output.outputs = {2, 3};  // a graph output keeps its own memory
  EXPECT_FALSE(shared(output));
  Graph input = base;
  input.inputs = {0, 1};  // so does a graph input
  input.nodes[0].outputs = {};
  EXPECT_FALSE(shared(input));
  Graph constant = base;
  constant.tensors[1].kind = TensorKind::kConstant;  // different arenas
  constant.nodes[0].outputs = {};
  EXPECT_FALSE(shared(constant));
  Graph off = base;
  off.nodes[1].in_place = InPlace::kNone;
  EXPECT_FALSE(shared(off));
}

TEST(CheckGraph, NamesWhatIsWrong) {
  auto error = [](const Graph& g) { return CheckGraph(g).message(); };
  Graph g = MakeChain(3, 8);
  EXPECT_TRUE(CheckGraph(g).ok());
  Graph bad = g;
  bad.nodes[1].inputs = {7};
  EXPECT_NE(error(bad).find("out of range"), std::string::npos) << error(bad);
  bad = g;
  bad.nodes[1].outputs = {1};  // written twice
  EXPECT_NE(error(bad).find("already written by node 0"), std::string::npos) << error(bad);
  bad = g;
  bad.nodes[0].outputs = {0};  // writes the graph input
  EXPECT_NE(error(bad).find("a graph input"), std::string::npos) << error(bad);
  bad = g;
  std::swap(bad.nodes[0], bad.nodes[1]);  // reads before the write
  EXPECT_NE(error(bad).find("reads it earlier"), std::string::npos) << error(bad);
  bad = g;
  bad.tensors[2].name = "t1";
  EXPECT_NE(error(bad).find("tensors #1 and #2 share the name 't1'"), std::string::npos) << error(bad);
  bad = g;
  bad.tensors[1].alignment = 48;
  EXPECT_NE(error(bad).find("not a power of two"), std::string::npos) << error(bad);
  bad = g;
  bad.nodes[0].temporaries = {1};
  EXPECT_NE(error(bad).find("temporary"), std::string::npos) << error(bad);
  bad = g;
  bad.nodes[0].temporaries = {kNoTensor};  // temporaries are not optional
  EXPECT_FALSE(CheckGraph(bad).ok());
  Result<Liveness> l = ComputeLiveness(bad);
  EXPECT_FALSE(l.ok());
}

TEST(TensorRoles, FromKindsAndLists) {
  Graph g = MakeChain(3, 8);
  g.tensors.push_back({"w", 4, TensorKind::kConstant});
  g.tensors.push_back({"tmp", 4});
  g.nodes[0].inputs.push_back(3);
  g.nodes[0].temporaries = {4};
  const std::vector<TensorRole> r = TensorRoles(g);
  EXPECT_EQ(r[0], TensorRole::kInput);
  EXPECT_EQ(r[1], TensorRole::kIntermediate);
  EXPECT_EQ(r[2], TensorRole::kOutput);
  EXPECT_EQ(r[3], TensorRole::kConstant);
  EXPECT_EQ(r[4], TensorRole::kTemporary);
  EXPECT_EQ(Name(r[4]), "temporary");
}

}  // namespace
}  // namespace tensormem
