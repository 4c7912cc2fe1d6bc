// SPDX-License-Identifier: Apache-2.0
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

// One load per iteration; `count` says how many events or buffers it read.
template <typename Load, typename Count>
void BM_Load(benchmark::State& state, const std::string& path, const char* what, Load load,
             Count count) {
  std::size_t items = 0;
  for (auto _ : state) {
    auto loaded = load(path);
    if (!loaded.ok()) {
      state.SkipWithError(loaded.status().ToString().c_str());
      return;
    }
    items = count(*loaded);
    benchmark::DoNotOptimize(items);
  }
  state.counters[what] = static_cast<double>(items);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * items));
}

void BM_LoadTrace(benchmark::State& state, const std::string& path) {
  BM_Load(state, path, "events", [](const std::string& p) { return LoadTrace(p); },
          [](const Trace& t) { return t.events.size(); });
}

void BM_LoadProblem(benchmark::State& state, const std::string& path) {
  BM_Load(state, path, "buffers", [](const std::string& p) { return LoadProblem(p); },
          [](const Problem& p) { return p.buffers.size(); });
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
