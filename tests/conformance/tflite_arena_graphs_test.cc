// SPDX-License-Identifier: Apache-2.0
// ../shared/conformance/tflite_arena.json, part "graphs": TFLite
// ArenaPlanner's graph cases (liveness by reference counting, temporaries,
// optional and dynamic tensors, in-place chains, preserve_all_tensors) planned
// by PlanGraph with the default (arena) strategy, alignment 4. Every case is
// also committed and run through the execution checker.
#include <algorithm>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "tensormem/graph.h"
#include "test_util.h"

namespace tensormem {
namespace {

using nlohmann::json;

struct Case {
  Graph graph;
  GraphPlanParams params;
};

Case BuildCase(const json& c) {
  int max_index = -1;
  auto see = [&](const json& list) {
    for (const json& v : list) max_index = std::max(max_index, v.get<int>());
  };
  see(c["inputs"]);
  see(c["outputs"]);
  for (const json& n : c["nodes"]) {
    see(n["inputs"]);
    see(n["outputs"]);
    see(n["temporaries"]);
  }
  if (c.contains("dynamic")) see(c["dynamic"]);
  if (c.contains("bytes"))
    for (const auto& [k, v] : c["bytes"].items()) max_index = std::max(max_index, std::stoi(k));
  Case out;
  Graph& g = out.graph;
  g.tensors.resize(static_cast<std::size_t>(max_index + 1));
  for (std::size_t i = 0; i < g.tensors.size(); ++i) g.tensors[i].bytes = 3 * (i + 1);
  if (c.contains("bytes"))
    for (const auto& [k, v] : c["bytes"].items())
      g.tensors[static_cast<std::size_t>(std::stoi(k))].bytes = v.get<std::uint64_t>();
  if (c.contains("dynamic"))
    for (const json& t : c["dynamic"]) g.tensors[t.get<std::size_t>()].kind = TensorKind::kDynamic;
  g.inputs = c["inputs"].get<std::vector<int>>();
  g.outputs = c["outputs"].get<std::vector<int>>();
  for (const json& n : c["nodes"]) {
    GraphNode node;
    node.inputs = n["inputs"].get<std::vector<int>>();
    node.outputs = n["outputs"].get<std::vector<int>>();
    node.temporaries = n["temporaries"].get<std::vector<int>>();
    if (n.value("inplace_input0", false)) node.in_place = InPlace::kInput0Unmodified;
    g.nodes.push_back(std::move(node));
  }
  out.params.alignment = 4;
  out.params.liveness.preserve_all_tensors = c.value("preserve_all_tensors", false);
  return out;
}

TEST(TfliteArenaConformance, Graphs) {
  TM_REQUIRE_SHARED("conformance/tflite_arena.json");
  const json data =
      json::parse(testing::ReadFile(testing::SharedDir() / "conformance/tflite_arena.json"));
  int cases = 0, checks = 0;
  for (const json& c : data["graphs"]) {
    SCOPED_TRACE(c["case"].get<std::string>());
    const Case k = BuildCase(c);
    Result<GraphPlan> plan = PlanGraph(k.graph, k.params);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    auto offset = [&](int t) { return plan->placements[static_cast<std::size_t>(t)].offset; };
    auto arena = [&](int t) { return plan->placements[static_cast<std::size_t>(t)].arena; };
    auto bytes = [&](int t) { return k.graph.tensors[static_cast<std::size_t>(t)].bytes; };
    const json& e = c["expect"];
    if (e.contains("offset"))
      for (const auto& [key, v] : e["offset"].items()) {
        const int t = std::stoi(key);
        EXPECT_EQ(arena(t), Arena::kScratch) << "tensor " << t;
        EXPECT_EQ(offset(t), v.get<std::uint64_t>()) << "tensor " << t;
        ++checks;
      }
    if (e.contains("after"))
      for (const json& p : e["after"]) {
        const int a = p[0].get<int>(), b = p[1].get<int>();
        EXPECT_EQ(offset(a), (offset(b) + bytes(b) + 3) / 4 * 4) << "after [" << a << ", " << b << "]";
        ++checks;
      }
    if (e.contains("same"))
      for (const json& p : e["same"]) {
        const int a = p[0].get<int>(), b = p[1].get<int>();
        EXPECT_EQ(arena(a), Arena::kScratch);
        EXPECT_EQ(offset(a), offset(b)) << "same [" << a << ", " << b << "]";
        ++checks;
      }
    if (e.contains("unallocated"))
      for (const json& t : e["unallocated"]) {
        EXPECT_EQ(arena(t.get<int>()), Arena::kNone) << "tensor " << t;
        ++checks;
      }
    if (e.contains("distinct")) {
      const auto ts = e["distinct"].get<std::vector<int>>();
      for (int a : ts) {
        EXPECT_EQ(arena(a), Arena::kScratch) << "tensor " << a;
        for (int b : ts) {
          if (a >= b) continue;
          EXPECT_TRUE(offset(a) + bytes(a) <= offset(b) || offset(b) + bytes(b) <= offset(a))
              << "tensors " << a << " and " << b << " overlap";
        }
      }
      ++checks;
    }
    // The plan runs on real memory without any live tensor overwritten.
    CommittedArenas arenas;
    ASSERT_TRUE(arenas.Commit(*plan).ok());
    for (bool full : {false, true}) {
      Result<ExecutionReport> run = CheckExecution(k.graph, *plan, arenas, {.full = full});
      EXPECT_TRUE(run.ok()) << run.status().ToString();
    }
    ++cases;
  }
  EXPECT_EQ(cases, static_cast<int>(data["graphs"].size()));
  std::printf("[ conformance ] tflite_arena.json graphs: %d cases, %d expectations\n", cases, checks);
}

}  // namespace
}  // namespace tensormem
