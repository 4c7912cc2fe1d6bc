// The exact solver on the MiniMalloc "challenging" instances
// (../shared/benchmarks/minimalloc/{A..K}.1048576.csv) at capacity
// 1,048,576: does each fit? One solve per iteration (they take seconds);
// counters: status (1 = answered with a plan, 0 = not), nodes, height, lower
// bound. The time limit per solve is $TENSORMEM_SOLVER_BENCH_LIMIT seconds
// (default 60).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tensormem/io.h"
#include "tensormem/solver.h"

namespace {

std::filesystem::path SharedDir() {
  if (const char* env = std::getenv("TENSORMEM_SHARED_DIR"); env && *env) return env;
  return TENSORMEM_SHARED_DIR;
}

void BM_FitMiniMalloc(benchmark::State& state, std::string name) {
  const std::filesystem::path path =
      SharedDir() / "benchmarks/minimalloc" / (name + ".1048576.csv");
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("missing " + path.string()).c_str());
    return;
  }
  tensormem::Result<tensormem::Problem> problem = tensormem::LoadProblem(path.string());
  if (!problem.ok()) {
    state.SkipWithError(problem.status().ToString().c_str());
    return;
  }
  tensormem::SolverParams params;
  params.goal = tensormem::SolveGoal::kFit;
  params.capacity = 1048576;
  const char* limit = std::getenv("TENSORMEM_SOLVER_BENCH_LIMIT");
  params.time_limit_seconds = limit ? std::atof(limit) : 60.0;
  tensormem::SolveResult last;
  for (auto _ : state) {
    tensormem::Result<tensormem::SolveResult> r = tensormem::SolveOffsets(*problem, params);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    last = std::move(*r);
    benchmark::DoNotOptimize(last.height);
  }
  const bool answered = last.status == tensormem::SolveStatus::kOptimal ||
                        last.status == tensormem::SolveStatus::kFeasible;
  state.counters["solved"] = answered ? 1 : 0;
  state.counters["nodes"] = static_cast<double>(last.nodes);
  state.counters["height"] = static_cast<double>(last.height);
  state.counters["lower_bound"] = static_cast<double>(last.lower_bound);
  state.SetLabel(std::string(tensormem::Name(last.status)));
}

}  // namespace

BENCHMARK_CAPTURE(BM_FitMiniMalloc, A, std::string("A"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, B, std::string("B"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, C, std::string("C"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, D, std::string("D"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, E, std::string("E"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, F, std::string("F"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, G, std::string("G"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, H, std::string("H"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, I, std::string("I"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, J, std::string("J"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_FitMiniMalloc, K, std::string("K"))->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
