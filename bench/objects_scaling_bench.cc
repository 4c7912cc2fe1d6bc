// Scaling of every shared-objects strategy on deep-network-like records
// (internal::GenerateNetworkRecords: chains with skip connections, sizes
// log-uniform 256 B - 8 MiB) at 1k, 10k and 100k records, default path and
// faithful reference. Times the strategy alone (the dispatcher's validation
// is off); the counter `ratio` is the plan total over the lower bound (sum of
// positional maximums), `objects` the number of objects. A size a strategy
// cannot do is skipped with the reason.
//
//   build/bench/objects_scaling_bench --benchmark_counters_tabular=true
#include <map>
#include <string>

#include <benchmark/benchmark.h>

#include "core/generators.h"
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
