// Reading input files, the first step of every CLI command and Python load:
//  - traces/<name>: LoadTrace on each real allocation trace of
//    ../shared/traces (gzip ones decompressed as they are read), and
//    LoadProblem on the same file (the trace turned into a planning problem);
//  - minimalloc/<name>: LoadProblem on each MiniMalloc CSV.
// Counters: lines per second (items), the file's events or buffers.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tensormem/io.h"
#include "tensormem/trace.h"

namespace tensormem {
namespace {

void BM_LoadTrace(benchmark::State& state, const std::string& path) {
  Result<Trace> trace = InvalidArgument("not run");
  for (auto _ : state) {
    trace = LoadTrace(path);
    if (!trace.ok()) {
      state.SkipWithError(trace.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(trace->events.data());
  }
  state.counters["events"] = static_cast<double>(trace->events.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * trace->events.size()));
}

void BM_LoadProblem(benchmark::State& state, const std::string& path) {
  Result<Problem> problem = InvalidArgument("not run");
  for (auto _ : state) {
    problem = LoadProblem(path);
    if (!problem.ok()) {
      state.SkipWithError(problem.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(problem->buffers.data());
  }
  state.counters["buffers"] = static_cast<double>(problem->buffers.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * problem->buffers.size()));
}

std::vector<std::filesystem::path> Files(const std::filesystem::path& dir,
                                         std::string_view suffix) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(suffix) != std::string::npos) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

const bool kRegistered = [] {
  const std::filesystem::path shared(TENSORMEM_SHARED_DIR);
  for (const auto& path : Files(shared / "traces", ".csv")) {
    const std::string name = path.filename().string();
    benchmark::RegisterBenchmark(("traces/LoadTrace/" + name).c_str(), BM_LoadTrace, path.string())
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("traces/LoadProblem/" + name).c_str(), BM_LoadProblem,
                                 path.string())
        ->Unit(benchmark::kMillisecond);
  }
  for (const auto& path : Files(shared / "benchmarks/minimalloc", ".csv"))
    benchmark::RegisterBenchmark(("minimalloc/LoadProblem/" + path.filename().string()).c_str(),
                                 BM_LoadProblem, path.string())
        ->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace
}  // namespace tensormem

BENCHMARK_MAIN();
