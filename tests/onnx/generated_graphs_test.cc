// SPDX-License-Identifier: Apache-2.0
// Generated graphs (RandWire, NAS cells) written as ONNX files and read back
// by the importer: the same nodes and bytes, so the same orders, peaks and
// arenas as the graph in memory; and the NAS generator's shape.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "harness/graph_generators.h"
#include "harness/graph_onnx.h"
#include "tensormem/graph.h"
#include "tensormem/onnx.h"

namespace tensormem {
namespace {

std::string TempFile(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".onnx")).string();
}

// The graph through an ONNX file: the imported graph.
Graph RoundTrip(const Graph& g, const std::string& name) {
  const std::string path = TempFile(name);
  const Status written = internal::WriteGraphOnnx(g, path);
  EXPECT_TRUE(written.ok()) << written.ToString();
  Result<OnnxModel> m = ImportOnnxFile(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m->graph) : Graph{};
}

void ExpectSamePlans(const Graph& g, const Graph& imported) {
  ASSERT_EQ(imported.nodes.size(), g.nodes.size());
  for (std::size_t v = 0; v < g.nodes.size(); ++v) EXPECT_EQ(imported.nodes[v].op, "tensormem.generated." + g.nodes[v].op);
  for (OrderStrategy order : {OrderStrategy::kGiven, OrderStrategy::kExact, OrderStrategy::kJoint}) {
    GraphPlanParams pp;
    pp.schedule.order = order;
    pp.schedule.time_limit_seconds = 2;
    const GraphPlan a = PlanGraph(g, pp).value(), b = PlanGraph(imported, pp).value();
    EXPECT_EQ(a.schedule.given_peak, b.schedule.given_peak) << Name(order);
    if (a.schedule.proved_optimal && b.schedule.proved_optimal) {
      EXPECT_EQ(a.schedule.peak, b.schedule.peak);
    }
    if (order == OrderStrategy::kGiven) {
      EXPECT_EQ(a.scratch_bytes(), b.scratch_bytes());
    }
  }
}

TEST(GeneratedOnnx, RandWireReadsBackTheSame) {
  internal::RandWireParams rp;
  rp.model = internal::RandomGraphModel::kBarabasiAlbert;
  rp.nodes = 16;
  rp.join = internal::JoinKind::kConcat;
  const Graph g = internal::GenerateRandWireGraph(rp);
  ExpectSamePlans(g, RoundTrip(g, "randwire"));
}

TEST(GeneratedOnnx, NasCellsReadBackTheSame) {
  internal::NasCellParams np;
  np.cells = 5;
  const Graph g = internal::GenerateNasGraph(np);
  ExpectSamePlans(g, RoundTrip(g, "nas"));
}

TEST(GeneratedOnnx, RefusesWhatOnnxCannotSay) {
  internal::RandWireParams rp;
  rp.nodes = 4;
  Graph g = internal::GenerateRandWireGraph(rp);
  g.nodes[0].in_place = InPlace::kInput0;
  EXPECT_FALSE(internal::WriteGraphOnnx(g, TempFile("refused")).ok());
}

TEST(NasGenerator, CellsAsAsked) {
  internal::NasCellParams np;
  np.cells = 6;
  np.nodes = 4;
  const Graph g = internal::GenerateNasGraph(np);
  ASSERT_TRUE(CheckGraph(g).ok());
  int concats = 0, sums = 0, reductions = 0;
  for (const GraphNode& n : g.nodes) {
    concats += n.op == "concat";
    sums += n.op == "sum";
    reductions += n.op == "reduce";
    if (n.op == "sum") {
      EXPECT_EQ(n.inputs.size(), 2u);
    }
    if (n.op == "concat") {
      EXPECT_EQ(n.inputs.size(), 4u);
    }
  }
  EXPECT_EQ(concats, 6);
  EXPECT_EQ(sums, 6 * 4);
  EXPECT_GT(reductions, 0);  // the cell after a reduction cell reduces its older input
  EXPECT_EQ(internal::GenerateNasGraph(np).nodes.size(), g.nodes.size());  // deterministic
  np.seed = 2;
  const Graph other = internal::GenerateNasGraph(np);
  bool differs = other.nodes.size() != g.nodes.size();
  for (std::size_t v = 0; !differs && v < g.nodes.size(); ++v) differs = other.nodes[v].op != g.nodes[v].op;
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace tensormem
