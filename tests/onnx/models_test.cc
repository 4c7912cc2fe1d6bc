// SPDX-License-Identifier: Apache-2.0
// Every model in ../shared/models: imports with every shape known, matches
// the reference activation counts, sums and peaks of models/README.md (a
// simpler liveness convention, recomputed here), plans with the TFLite order
// and with `best`, and runs through the execution checker on committed
// memory.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "tensormem/lower_bounds.h"
#include "tensormem/onnx.h"
#include "test_util.h"

namespace tensormem {
namespace {

struct Reference {
  std::size_t activations = 0;
  std::uint64_t sum = 0;
  std::uint64_t peak = 0;
};

std::uint64_t Number(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  return std::stoull(s);
}

// Rows "| model | input | activations | sum | peak |" of models/README.md.
// (Parsed by hand: std::regex trips GCC 12's warnings in sanitizer builds.)
std::map<std::string, Reference> ReadReadme() {
  std::map<std::string, Reference> out;
  std::ifstream in(testing::SharedDir() / "models/README.md");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '|')) {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    // "", model, input, activations, sum, peak
    if (cells.size() != 6 || cells[3].empty() || !std::isdigit(static_cast<unsigned char>(cells[3][0])))
      continue;
    out[cells[1]] = {static_cast<std::size_t>(Number(cells[3])), Number(cells[4]), Number(cells[5])};
  }
  return out;
}

// The README's convention: activations are the data inputs and node outputs;
// each lives from its writer (node 0 for inputs) to its last reader, graph
// outputs to the end; no in-place sharing, no alignment.
Reference Recount(const Graph& g) {
  const TaskIndex last = static_cast<TaskIndex>(g.nodes.size()) - 1;
  std::vector<TaskIndex> first(g.tensors.size(), -1), end(g.tensors.size(), -1);
  for (int t : g.inputs) first[static_cast<std::size_t>(t)] = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    for (int t : g.nodes[i].outputs)
      if (t >= 0) first[static_cast<std::size_t>(t)] = static_cast<TaskIndex>(i);
    for (int t : g.nodes[i].inputs)
      if (t >= 0) end[static_cast<std::size_t>(t)] = static_cast<TaskIndex>(i);
  }
  for (int t : g.outputs) end[static_cast<std::size_t>(t)] = last;
  Reference r;
  std::vector<UsageRecord> records;
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].kind != TensorKind::kActivation || first[t] < 0) continue;
    ++r.activations;
    r.sum += g.tensors[t].bytes;
    records.push_back({g.tensors[t].bytes, first[t], std::max(first[t], end[t])});
  }
  r.peak = PeakLiveBytes(records);
  return r;
}

TEST(Models, ImportPlanAndRunEveryModel) {
  TM_REQUIRE_SHARED("models/README.md");
  const std::map<std::string, Reference> reference = ReadReadme();
  ASSERT_EQ(reference.size(), 20u) << "cannot read the table of models/README.md";
  int models = 0, at_bound = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::SharedDir() / "models")) {
    if (entry.path().extension() != ".onnx") continue;
    const std::string name = entry.path().stem().string();
    SCOPED_TRACE(name);
    Result<OnnxModel> m = ImportOnnxFile(entry.path().string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    for (std::size_t t = 0; t < m->graph.tensors.size(); ++t)
      for (std::int64_t d : m->shapes[t]) ASSERT_GE(d, 0) << m->graph.tensors[t].name;

    ASSERT_TRUE(reference.count(name));
    const Reference& want = reference.at(name);
    const Reference got = Recount(m->graph);
    EXPECT_EQ(got.peak, want.peak);
    // Exact everywhere but in swin_t, where the reference leaves a few tiny
    // data-independent tensors (a scalar Pow per block, one int64 index
    // tensor) unfolded that we fold: 13 tensors, 38,464 bytes.
    const std::size_t count_slack = name == "swin_t" ? 13 : 0;
    const std::uint64_t sum_slack = name == "swin_t" ? 38'464 : 0;
    EXPECT_LE(got.activations, want.activations);
    EXPECT_LE(want.activations - got.activations, count_slack);
    EXPECT_LE(got.sum, want.sum);
    EXPECT_LE(want.sum - got.sum, sum_slack);

    Result<GraphPlan> arena = PlanGraph(m->graph);
    ASSERT_TRUE(arena.ok()) << arena.status().ToString();
    GraphPlanParams best_params;
    best_params.strategy = OffsetsStrategy::kBest;
    Result<GraphPlan> best = PlanGraph(m->graph, best_params);
    ASSERT_TRUE(best.ok()) << best.status().ToString();
    EXPECT_TRUE(ValidateGraphPlan(m->graph, *best).ok());
    const double ratio = Ratio(best->scratch_bytes(), best->scratch_plan.lower_bound);
    EXPECT_LE(ratio, 1.08);
    at_bound += ratio < 1.0005;

    // On real memory: no live tensor is ever overwritten.
    CommittedArenas arenas;
    ASSERT_TRUE(arenas.Commit(*best).ok());
    Result<ExecutionReport> run = CheckExecution(m->graph, *best, arenas);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(run->nodes_run, m->graph.nodes.size());
    ASSERT_TRUE(arenas.Commit(*arena).ok());
    run = CheckExecution(m->graph, *arena, arenas);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    ++models;
  }
  EXPECT_EQ(models, 20);
  // Against peak live bytes at alignment 64 (see docs/design/graph_planner.md):
  // convnext_tiny (no greedy order reaches it) and shufflenet (alignment
  // padding alone) stay above.
  EXPECT_GE(at_bound, 18);
}

}  // namespace
}  // namespace tensormem
