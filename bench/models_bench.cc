// SPDX-License-Identifier: Apache-2.0
// The graph planner on every model of ../shared/models: a Markdown table of
// import time, tensors planned, the lower bound (peak live bytes of the
// scratch arena), each offset strategy's arena / lower bound, planning times
// and the execution checker's verdict on committed memory (arena, best and
// exact plans).
//
//   models_bench [--align N] [--repeat N] [MODELS_DIR]
//
// Times are the median of --repeat runs (default 5).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tensormem/onnx.h"

namespace {

using namespace tensormem;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <typename Fn>
double TimeMs(int repeat, Fn&& fn) {
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return Median(ms);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t align = 64;
  int repeat = 5;
  std::filesystem::path dir = std::filesystem::path(TENSORMEM_SHARED_DIR) / "models";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--align") && i + 1 < argc)
      align = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else
      dir = argv[i];
  }
  std::vector<std::filesystem::path> models;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".onnx") models.push_back(e.path());
  if (models.empty()) {
    std::fprintf(stderr, "models_bench: no .onnx files in %s\n", dir.c_str());
    return 2;
  }
  std::sort(models.begin(), models.end());
  const std::vector<OffsetsStrategy> strategies = {
      OffsetsStrategy::kNaive, OffsetsStrategy::kGreedyBySize, OffsetsStrategy::kGreedyByBreadth,
      OffsetsStrategy::kFromObjects, OffsetsStrategy::kArena, OffsetsStrategy::kBest,
      OffsetsStrategy::kExact};
  // Columns of their own (times, the checker) for these.
  const std::size_t kArenaAt = 4, kBestAt = 5, kExactAt = 6;
  std::printf("alignment %llu, times: median of %d runs\n\n",
              static_cast<unsigned long long>(align), repeat);
  std::printf("| model | nodes (folded) | import ms | tensors planned | lower bound |");
  for (OffsetsStrategy s : strategies) std::printf(" %s |", std::string(Name(s)).c_str());
  std::printf(" best - bound (bytes) | arena ms | best ms | exact ms | persistent | naive scratch | checker |\n|---|---|---|---|---|");
  for (std::size_t k = 0; k < strategies.size(); ++k) std::printf("---|");
  std::printf("---|---|---|---|---|---|---|\n");
  int failures = 0;
  for (const auto& path : models) {
    Result<OnnxModel> model = ImportOnnxFile(path.string());
    if (!model.ok()) {
      std::printf("| %s | import failed: %s |\n", path.stem().c_str(), model.status().message().c_str());
      ++failures;
      continue;
    }
    const double import_ms = TimeMs(repeat, [&] { (void)ImportOnnxFile(path.string()); });
    std::vector<GraphPlan> plans;
    std::vector<double> ms;
    bool ok = true;
    for (OffsetsStrategy s : strategies) {
      GraphPlanParams p;
      p.alignment = align;
      p.strategy = s;
      Result<GraphPlan> plan = PlanGraph(model->graph, p);
      if (!plan.ok()) {
        std::fprintf(stderr, "%s: %s: %s\n", path.stem().c_str(), std::string(Name(s)).c_str(),
                     plan.status().ToString().c_str());
        ok = false;
        break;
      }
      plans.push_back(std::move(*plan));
      ms.push_back(TimeMs(repeat, [&] { (void)PlanGraph(model->graph, p); }));
    }
    if (!ok) {
      ++failures;
      continue;
    }
    const GraphPlan& best = plans[kBestAt];
    std::string verdict = "pass";
    for (std::size_t k : {kArenaAt, kBestAt, kExactAt}) {
      const GraphPlan& plan = plans[k];
      CommittedArenas arenas;
      Status st = arenas.Commit(plan);
      Result<ExecutionReport> run = st.ok() ? CheckExecution(model->graph, plan, arenas)
                                            : Result<ExecutionReport>(st);
      if (!run.ok()) {
        verdict = "FAIL: " + run.status().message();
        ++failures;
        break;
      }
    }
    const std::uint64_t bound = best.scratch_plan.lower_bound;
    std::printf("| %s | %zu (%zu) | %.1f | %zu | %llu |", path.stem().c_str(), model->graph.nodes.size(),
                model->folded_nodes, import_ms, best.scratch.buffers.size(),
                static_cast<unsigned long long>(bound));
    for (const GraphPlan& plan : plans) std::printf(" %.4f |", Ratio(plan.scratch_bytes(), bound));
    std::printf(" %llu | %.2f | %.2f | %.2f | %llu | %llu | %s |\n",
                static_cast<unsigned long long>(best.scratch_bytes() - bound), ms[kArenaAt],
                ms[kBestAt], ms[kExactAt],
                static_cast<unsigned long long>(best.persistent_bytes),
                static_cast<unsigned long long>(best.naive_scratch_bytes), verdict.c_str());
  }
  return failures ? 1 : 0;
}
