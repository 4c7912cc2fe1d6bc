// SPDX-License-Identifier: Apache-2.0
// Scaling of every shared-objects strategy on deep-network-like records
// (internal::GenerateNetworkRecords: chains with skip connections, sizes
// log-uniform 256 B - 8 MiB) at 1k, 10k and 100k records, default path and
// faithful reference. Times the strategy alone (the dispatcher's validation
// is off); the counter `ratio` is the plan total over the lower bound (sum of
// positional maximums), `objects` the number of objects. A size a strategy
// cannot do is skipped with the reason.
//
// `lower_bound` times ObjectsLowerBound alone on the same records, up to 10^6.
//
// min_cost_flow's default path differs from the faithful solver above 100
// records (a windowed flow graph); the `mcf_window_cost` benchmarks measure
// what that costs in plan size: counters geomean/min/max of windowed total /
// faithful total, over seeds of network-like records and over the MiniMalloc
// benchmark instances in ../shared.
//
//   build/bench/objects_scaling_bench --benchmark_counters_tabular=true
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include <benchmark/benchmark.h>

#include "harness/generators.h"
#include "planning/objects/min_cost_flow.h"
#include "tensormem/io.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"

namespace tensormem {
namespace {

const std::vector<UsageRecord>& Records(std::size_t n) {
  static std::map<std::size_t, std::vector<UsageRecord>> cache;
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, internal::GenerateNetworkRecords(n, 42)).first;
  return it->second;
}

// Why a size is skipped, or empty when the strategy runs it.
std::string SkipReason(ObjectsStrategy s, bool reference, std::size_t n) {
  if (!reference) return "";
  switch (s) {
    case ObjectsStrategy::kMinCostFlow:
    case ObjectsStrategy::kBest:
      return n > 500 ? "reference min_cost_flow is O(n^3) (SPFA over n^2 edges): limited to 500 records"
                     : "";
    case ObjectsStrategy::kGreedyBySize:
    case ObjectsStrategy::kGreedyBest:
      return n > 10'000 ? "reference greedy_by_size is O(n^2) time and n x objects memory: "
                          "skipped above 10,000 records here"
                        : "";
    default:
      return "";
  }
}

void PlanObjectsBench(benchmark::State& state, ObjectsStrategy strategy, bool reference) {
  const auto n = static_cast<std::size_t>(state.range(0));
  if (const std::string why = SkipReason(strategy, reference, n); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const std::vector<UsageRecord>& records = Records(n);
  PlanParams params;
  params.reference = reference;
  params.validate = false;
  std::uint64_t total = 0;
  std::size_t objects = 0;
  for (auto _ : state) {
    Result<ObjectsPlan> plan = PlanObjects(records, strategy, params);
    if (!plan.ok()) {
      state.SkipWithError(plan.status().ToString().c_str());
      return;
    }
    total = TotalSize(*plan);
    objects = plan->object_sizes.size();
    benchmark::DoNotOptimize(plan->object_of.data());
  }
  state.counters["ratio"] = Ratio(total, ObjectsLowerBound(records));
  state.counters["objects"] = static_cast<double>(objects);
}

// windowed / faithful plan totals of min_cost_flow over a set of inputs.
void ReportWindowCost(benchmark::State& state, const std::vector<std::vector<UsageRecord>>& inputs) {
  double log_sum = 0, lo = 1e300, hi = 0;
  for (auto _ : state) {
    log_sum = 0, lo = 1e300, hi = 0;
    for (const auto& records : inputs) {
      Result<ObjectsPlan> windowed = planning::MinCostFlowWindowed(records, {});
      Result<ObjectsPlan> faithful = planning::MinCostFlowReference(records);
      if (!windowed.ok() || !faithful.ok()) {
        state.SkipWithError((windowed.ok() ? faithful : windowed).status().ToString().c_str());
        return;
      }
      const double q = static_cast<double>(TotalSize(*windowed)) /
                       static_cast<double>(std::max<std::uint64_t>(1, TotalSize(*faithful)));
      log_sum += std::log(q);
      lo = std::min(lo, q);
      hi = std::max(hi, q);
    }
  }
  state.counters["geomean"] = std::exp(log_sum / static_cast<double>(inputs.size()));
  state.counters["min"] = lo;
  state.counters["max"] = hi;
  state.counters["inputs"] = static_cast<double>(inputs.size());
}

void McfWindowCostNetwork(benchmark::State& state) {
  std::vector<std::vector<UsageRecord>> inputs;
  for (std::uint64_t seed = 1; seed <= 12; ++seed)
    inputs.push_back(internal::GenerateNetworkRecords(static_cast<std::size_t>(state.range(0)), seed));
  ReportWindowCost(state, inputs);
}

void McfWindowCostMinimalloc(benchmark::State& state) {
  const std::filesystem::path dir = std::filesystem::path(TENSORMEM_SHARED_DIR) / "benchmarks/minimalloc";
  std::vector<std::vector<UsageRecord>> inputs;
  if (std::filesystem::exists(dir))
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".csv") continue;
      Result<Problem> problem = LoadProblem(entry.path().string());
      if (!problem.ok()) continue;
      std::vector<UsageRecord> records = ToRecords(*problem);
      // The solvers take records in task order (PlanObjects sorts for them).
      std::stable_sort(records.begin(), records.end(), [](const UsageRecord& a, const UsageRecord& b) {
        return a.first_task < b.first_task;
      });
      if (records.size() > 100) inputs.push_back(std::move(records));  // windowed above 100
    }
  if (inputs.empty()) {
    state.SkipWithError(("no MiniMalloc instances under " + dir.string()).c_str());
    return;
  }
  ReportWindowCost(state, inputs);
}

// The lower bound every objects plan is reported against (and objects best
// computes inside its time limit): the sum of positional maximums.
void LowerBound(benchmark::State& state) {
  const std::vector<UsageRecord>& records = Records(static_cast<std::size_t>(state.range(0)));
  std::uint64_t bound = 0;
  for (auto _ : state) {
    bound = ObjectsLowerBound(records);
    benchmark::DoNotOptimize(bound);
  }
  state.counters["bound"] = static_cast<double>(bound);
}
BENCHMARK(LowerBound)->Name("lower_bound")->Arg(10'000)->Arg(100'000)->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);

BENCHMARK(McfWindowCostNetwork)->Name("mcf_window_cost/network")->Arg(300)->Arg(500)
    ->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(McfWindowCostMinimalloc)->Name("mcf_window_cost/minimalloc")
    ->Unit(benchmark::kMillisecond)->Iterations(1);

const bool registered = [] {
  for (bool reference : {false, true})
    for (ObjectsStrategy s : AllObjectsStrategies()) {
      const std::string name =
          std::string("objects/") + std::string(Name(s)) + (reference ? "/reference" : "");
      benchmark::RegisterBenchmark(name.c_str(), PlanObjectsBench, s, reference)
          ->Arg(1'000)
          ->Arg(10'000)
          ->Arg(100'000)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.3);
    }
  return true;
}();

}  // namespace
}  // namespace tensormem

BENCHMARK_MAIN();
