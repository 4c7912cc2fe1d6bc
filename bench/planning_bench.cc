// SPDX-License-Identifier: Apache-2.0
// Offset planning benchmarks:
//  - Scaling: every offset strategy on 1k, 10k, 100k deep-network-like
//    records (chains with skip connections, varied sizes), the scalable
//    default against the faithful quadratic reference where it exists.
//  - peak_live_bytes: the bound every offsets plan is reported against
//    (computed by the dispatcher and again by `tensormem plan`), up to 10^6
//    records: the network-like ones in task order and shuffled, and random
//    lifetimes (many live at once).
//  - MiniMalloc: every offset strategy on each "challenging" instance of
//    ../shared/benchmarks/minimalloc, reporting total / lower bound.
// Counters: total (bytes), lower_bound, ratio = total / lower bound.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>

#include "harness/generators.h"
#include "tensormem/io.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"

namespace tensormem {
namespace {

void Report(benchmark::State& state, const Result<OffsetsPlan>& plan) {
  if (!plan.ok()) {
    state.SkipWithError(plan.status().ToString().c_str());
    return;
  }
  state.counters["total"] = static_cast<double>(plan->total);
  state.counters["lower_bound"] = static_cast<double>(plan->lower_bound);
  state.counters["ratio"] = Ratio(plan->total, plan->lower_bound);
}

void BM_Scaling(benchmark::State& state, OffsetsStrategy strategy, bool reference) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Problem problem = FromRecords(internal::GenerateNetworkRecords(n, 42));
  PlanParams params;
  params.reference = reference;
  params.validate = false;  // time the strategy, not the validator
  params.time_limit_seconds = 1;
  Result<OffsetsPlan> plan = InvalidArgument("not run");
  for (auto _ : state) {
    plan = PlanOffsets(problem, strategy, params);
    benchmark::DoNotOptimize(plan);
  }
  Report(state, plan);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

enum class PeakInput { kNetwork, kShuffled, kRandom };
void BM_PeakLiveBytes(benchmark::State& state, PeakInput input) {
  const auto n = static_cast<std::size_t>(state.range(0));
  // Random lifetimes: about half the tensors live at once (network: a few hundred).
  Problem problem = FromRecords(input == PeakInput::kRandom
                                    ? internal::GenerateRandomRecords(n, 42, static_cast<TaskIndex>(n), 1 << 20)
                                    : internal::GenerateNetworkRecords(n, 42));
  if (input == PeakInput::kShuffled)
    std::shuffle(problem.buffers.begin(), problem.buffers.end(), std::mt19937_64(7));
  std::uint64_t peak = 0;
  for (auto _ : state) {
    peak = PeakLiveBytes(problem, 64);
    benchmark::DoNotOptimize(peak);
  }
  state.counters["peak"] = static_cast<double>(peak);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK_CAPTURE(BM_PeakLiveBytes, network, PeakInput::kNetwork)->Name("peak_live_bytes/network")
    ->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PeakLiveBytes, shuffled, PeakInput::kShuffled)->Name("peak_live_bytes/shuffled")
    ->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PeakLiveBytes, random, PeakInput::kRandom)->Name("peak_live_bytes/random")
    ->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

void BM_MiniMalloc(benchmark::State& state, std::string path, OffsetsStrategy strategy) {
  Result<Problem> problem = LoadProblem(path);
  if (!problem.ok()) {
    state.SkipWithError(problem.status().ToString().c_str());
    return;
  }
  PlanParams params;
  params.time_limit_seconds = 10;
  Result<OffsetsPlan> plan = InvalidArgument("not run");
  for (auto _ : state) plan = PlanOffsets(*problem, strategy, params);
  Report(state, plan);
}

const bool kRegistered = [] {
  for (OffsetsStrategy s : AllOffsetsStrategies()) {
    if (s == OffsetsStrategy::kExact) continue;  // the solver has its own benchmark
    const std::string name(Name(s));
    benchmark::RegisterBenchmark(("scaling/" + name).c_str(), BM_Scaling, s, false)
        ->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond);
    if (s == OffsetsStrategy::kGreedyBySize || s == OffsetsStrategy::kGreedyByBreadth ||
        s == OffsetsStrategy::kArena || s == OffsetsStrategy::kGreedyInOrder)
      benchmark::RegisterBenchmark(("scaling_reference/" + name).c_str(), BM_Scaling, s, true)
          ->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond)->Iterations(1);
  }
  const std::filesystem::path dir = std::filesystem::path(TENSORMEM_SHARED_DIR) / "benchmarks/minimalloc";
  if (std::filesystem::exists(dir))
    for (const char* inst : {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K"})
      for (OffsetsStrategy s : AllOffsetsStrategies()) {
        if (s == OffsetsStrategy::kExact) continue;
        benchmark::RegisterBenchmark(
            ("minimalloc/" + std::string(inst) + "/" + std::string(Name(s))).c_str(), BM_MiniMalloc,
            (dir / (std::string(inst) + ".1048576.csv")).string(), s)
            ->Unit(benchmark::kMillisecond);
      }
  return true;
}();

}  // namespace
}  // namespace tensormem

BENCHMARK_MAIN();
