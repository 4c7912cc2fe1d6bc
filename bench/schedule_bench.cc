// SPDX-License-Identifier: Apache-2.0
// The execution-order scheduler on the shared ONNX models and on generated
// RandWire-style graphs and stacked NAS cells: a Markdown table of, per
// graph, the nodes, the peak
// of live scratch bytes and the scratch arena (TFLite's arena strategy) in
// the given order, with the best heuristic order and with the exact search
// (proved or not, its lower bound, seconds), the arena of --order joint
// (with the same TFLite arena strategy), and the execution checker's
// verdict on every order planned. --onnx-dir DIR writes each generated
// graph there as an ONNX file and measures the graph read back from it, as
// `tensormem plan FILE --order ...` reads it.
//
// --seed S shifts every generated graph's seed (held-out graphs of the same
// kinds). The "cells" rows are single RandWire cells of the kind SERENITY
// (Ahn et al., MLSys 2020) schedules: Watts-Strogatz, N = 32, K = 4,
// P = 0.75, sum and concat joins, one row per seed.
//
//   schedule_bench [--time-limit S] [--models DIR] [--no-models] [--no-randwire]
//                  [--no-nas] [--no-cells] [--seed S] [--only TEXT] [--onnx-dir DIR]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "harness/graph_generators.h"
#include "harness/graph_onnx.h"
#include "tensormem/onnx.h"

namespace {

using namespace tensormem;

struct Planned {
  Schedule schedule;
  std::uint64_t arena = 0;
  bool checked = false;
};

Planned PlanIn(const Graph& g, OrderStrategy order, double time_limit) {
  GraphPlanParams pp;
  pp.schedule.order = order;
  pp.schedule.time_limit_seconds = time_limit;
  Planned out;
  auto plan = PlanGraph(g, pp);
  if (!plan.ok()) {
    std::fprintf(stderr, "plan (%s): %s\n", std::string(Name(order)).c_str(),
                 plan.status().ToString().c_str());
    return out;
  }
  out.schedule = plan->schedule;
  out.arena = plan->scratch_bytes();
  CommittedArenas arenas;
  out.checked = arenas.Commit(*plan).ok() && CheckExecution(g, *plan, arenas).ok();
  return out;
}

double MiB(std::uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

std::string only;      // --only: the graphs whose name contains it
void Row(const std::string& name, const Graph& g, double time_limit) {
  if (name.find(only) == std::string::npos) return;
  const Planned given = PlanIn(g, OrderStrategy::kGiven, time_limit);
  const Planned best = PlanIn(g, OrderStrategy::kBest, time_limit);
  const Planned exact = PlanIn(g, OrderStrategy::kExact, time_limit);
  const Planned joint = PlanIn(g, OrderStrategy::kJoint, time_limit);
  const double gp = static_cast<double>(given.schedule.peak);
  auto pct = [&](std::uint64_t p) { return gp > 0 ? 100.0 * (static_cast<double>(p) - gp) / gp : 0.0; };
  std::printf("| %s | %zu | %.3f | %.3f | %.3f (%+.1f%%, %s) | %.3f | %.4f | %.3f (%+.1f%%) | %.3f | %s | %.3f | %zu | %.3f | %.3f (%s) | %s |\n",
              name.c_str(), g.nodes.size(), MiB(given.schedule.peak), MiB(given.arena),
              MiB(best.schedule.peak), pct(best.schedule.peak), best.schedule.method.c_str(),
              MiB(best.arena), best.schedule.seconds, MiB(exact.schedule.peak),
              pct(exact.schedule.peak), MiB(exact.arena),
              exact.schedule.proved_optimal ? "yes" : "no", MiB(exact.schedule.lower_bound.value_or(0)),
              exact.schedule.states, exact.schedule.seconds, MiB(joint.arena), joint.schedule.method.c_str(),
              given.checked && best.checked && exact.checked && joint.checked ? "ok" : "FAILED");
  std::fflush(stdout);
}

std::string onnx_dir;  // --onnx-dir: generated graphs through ONNX files there

// A generated graph's row: as it is, or read back from its ONNX file.
void GeneratedRow(const std::string& name, const Graph& g, double time_limit) {
  if (name.find(only) == std::string::npos) return;
  if (onnx_dir.empty()) return Row(name, g, time_limit);
  const std::string path = (std::filesystem::path(onnx_dir) / (name + ".onnx")).string();
  auto read = [&]() -> Result<OnnxModel> {
    TM_RETURN_IF_ERROR(internal::WriteGraphOnnx(g, path));
    return ImportOnnxFile(path);
  }();
  if (!read.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), read.status().ToString().c_str());
    return;
  }
  Row(name, read->graph, time_limit);
}

std::uint64_t seed_base = 1;  // --seed

void NasRows(double time_limit) {
  // (cells, intermediate nodes per cell): about 60 to 270 graph nodes.
  const std::pair<int, int> sizes[] = {{3, 4}, {8, 4}, {8, 5}, {14, 4}};
  for (const auto& [cells, nodes] : sizes)
    for (std::uint64_t seed = seed_base; seed < seed_base + 2; ++seed) {
      internal::NasCellParams np;
      np.cells = cells;
      np.nodes = nodes;
      np.seed = seed;
      GeneratedRow("nas-" + std::to_string(cells) + "x" + std::to_string(nodes) + "-s" + std::to_string(seed),
                   internal::GenerateNasGraph(np), time_limit);
    }
}

void CellRows(double time_limit) {
  using internal::JoinKind;
  for (JoinKind join : {JoinKind::kSum, JoinKind::kConcat})
    for (std::uint64_t seed = seed_base; seed < seed_base + 4; ++seed) {
      internal::RandWireParams rp;  // its defaults: N = 32, K = 4, P = 0.75, one stage
      rp.model = internal::RandomGraphModel::kWattsStrogatz;
      rp.join = join;
      rp.seed = seed;
      GeneratedRow(std::string("cell-ws-32-4-0.75-") + (join == JoinKind::kSum ? "sum" : "concat") + "-s" +
                       std::to_string(seed),
                   internal::GenerateRandWireGraph(rp), time_limit);
    }
}

void RandWireRows(double time_limit) {
  using internal::JoinKind;
  using internal::RandomGraphModel;
  const char* model_names[] = {"ws", "er", "ba"};
  // (stages, random-graph nodes per stage): about 50 to 300 graph nodes.
  const std::pair<int, int> sizes[] = {{1, 32}, {3, 24}, {3, 40}, {3, 50}};
  for (const auto& [stages, nodes] : sizes)
    for (int model = 0; model < 3; ++model)
      for (JoinKind join : {JoinKind::kSum, JoinKind::kConcat}) {
        internal::RandWireParams rp;
        rp.model = static_cast<RandomGraphModel>(model);
        rp.join = join;
        rp.stages = stages;
        rp.nodes = nodes;
        rp.k = 4;
        rp.p = rp.model == RandomGraphModel::kErdosRenyi ? 0.2 : 0.75;
        rp.m = 2;
        rp.seed = seed_base + static_cast<std::uint64_t>(model + 3 * stages);
        const Graph g = internal::GenerateRandWireGraph(rp);
        std::string name = std::string("randwire-") + model_names[model] + "-" +
                           (join == JoinKind::kSum ? "sum" : "concat") + "-" + std::to_string(stages) + "x" +
                           std::to_string(rp.nodes);
        GeneratedRow(name, g, time_limit);
      }
}

void Header() {
  std::printf("| graph | nodes | given peak MiB | given arena MiB | best peak MiB (vs given, method) | "
              "best arena MiB | best s | exact peak MiB (vs given) | exact arena MiB | proved | "
              "lower bound MiB | states | exact s | joint arena MiB (order) | execution check |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

}  // namespace

int main(int argc, char** argv) {
  double time_limit = 10;
  bool models = true, randwire = true, nas = true, cells = true;
  std::filesystem::path dir = std::filesystem::path(TENSORMEM_SHARED_DIR) / "models";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--time-limit") && i + 1 < argc)
      time_limit = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--models") && i + 1 < argc)
      dir = argv[++i];
    else if (!std::strcmp(argv[i], "--no-models"))
      models = false;
    else if (!std::strcmp(argv[i], "--no-randwire"))
      randwire = false;
    else if (!std::strcmp(argv[i], "--no-nas"))
      nas = false;
    else if (!std::strcmp(argv[i], "--no-cells"))
      cells = false;
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      seed_base = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!std::strcmp(argv[i], "--onnx-dir") && i + 1 < argc)
      onnx_dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: schedule_bench [--time-limit S] [--models DIR] [--no-models] [--no-randwire] [--no-nas] [--no-cells] [--seed S] [--only TEXT] [--onnx-dir DIR]\n");
      return 2;
    }
  }
  Header();
  if (models) {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".onnx") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto m = ImportOnnxFile(f.string());
      if (!m.ok()) {
        std::fprintf(stderr, "%s: %s\n", f.c_str(), m.status().ToString().c_str());
        continue;
      }
      Row(f.stem().string(), m->graph, time_limit);
    }
  }
  if (randwire) RandWireRows(time_limit);
  if (nas) NasRows(time_limit);
  if (cells) CellRows(time_limit);
  return 0;
}
