// SPDX-License-Identifier: Apache-2.0
// The objects dispatcher, and the part of the offsets dispatcher every
// offsets strategy shares (RunOffsetsStrategy): names, argument checks,
// sorting records into task order, timing, lower bounds and validation are
// done here once, so every strategy file holds only its algorithm. The
// offsets table (which knows best and exact, built over the solver) sits
// above the solver, in src/strategies/offsets_dispatch.cc.
#include "tensormem/planning.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/parse_name.h"
#include "planning/check_records.h"
#include "planning/objects/objects_strategies.h"
#include "planning/offsets/offsets_strategies.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/validator.h"

namespace tensormem {
namespace {

// One table per strategy family: enum value, name, implementation. Adding
// a strategy is one row here (plus its enum value and its file); the
// offsets table is in src/strategies/offsets_dispatch.cc. Rows are in
// AllObjectsStrategies' order: the near-linear strategies first, best last.
using ObjectsFn = Result<ObjectsPlan> (*)(std::span<const UsageRecord>, const PlanParams&);
using ExtentObjectsFn = Result<ExtentObjectsPlan> (*)(std::span<const ExtentRecord>, const PlanParams&);

struct ObjectsEntry {
  ObjectsStrategy strategy;
  std::string_view name;
  ObjectsFn plan;
  ExtentObjectsFn plan_extents;  // null: 1-D sizes only
};

constexpr ObjectsFn Sizes(ObjectsFn f) { return f; }
constexpr ExtentObjectsFn Extents(ExtentObjectsFn f) { return f; }

constexpr std::array<ObjectsEntry, 9> kObjectsTable = {{
    {ObjectsStrategy::kNaive, "naive", Sizes(planning::NaiveObjects), Extents(planning::NaiveObjects)},
    {ObjectsStrategy::kEquality, "equality", Sizes(planning::EqualityObjects),
     Extents(planning::EqualityObjects)},
    {ObjectsStrategy::kGreedyInOrder, "greedy_in_order", Sizes(planning::GreedyInOrderObjects),
     Extents(planning::GreedyInOrderObjects)},
    {ObjectsStrategy::kTightestFit, "tightest_fit", planning::TightestFitObjects, nullptr},
    {ObjectsStrategy::kGreedyByBreadth, "greedy_by_breadth", planning::GreedyByBreadthObjects, nullptr},
    {ObjectsStrategy::kGreedyBySize, "greedy_by_size", planning::GreedyBySizeObjects, nullptr},
    {ObjectsStrategy::kMinCostFlow, "min_cost_flow", planning::MinCostFlowObjects, nullptr},
    {ObjectsStrategy::kGreedyBest, "greedy_best", planning::GreedyBestObjects, nullptr},
    {ObjectsStrategy::kBest, "best", planning::BestObjects, nullptr},
}};

template <typename Entry, std::size_t N>
constexpr auto Values(const std::array<Entry, N>& table) {
  std::array<decltype(Entry::strategy), N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = table[i].strategy;
  return out;
}
constexpr auto kObjectsStrategies = Values(kObjectsTable);

template <typename Entry, std::size_t N, typename Enum>
const Entry* Find(const std::array<Entry, N>& table, Enum s) {
  for (const Entry& e : table)
    if (e.strategy == s) return &e;
  return nullptr;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Status CheckTimeLimitAndThreads(const PlanParams& params) {
  if (std::isnan(params.time_limit_seconds) || params.time_limit_seconds < 0)
    return InvalidArgument("PlanParams::time_limit_seconds must be >= 0 seconds (+infinity for none)");
  if (std::isnan(params.polish_seconds) || params.polish_seconds < 0)
    return InvalidArgument("PlanParams::polish_seconds must be >= 0 seconds");
  if (!(params.polish_time_share >= 0 && params.polish_time_share <= 1))
    return InvalidArgument("PlanParams::polish_time_share must be in [0, 1]");
  if (params.threads > kMaxPlanThreads)
    return InvalidArgument("PlanParams::threads must be at most " + std::to_string(kMaxPlanThreads) +
                           " (0: one per hardware thread), got " + std::to_string(params.threads));
  return Status::Ok();
}

// Strategies walk records in task order; sort a copy when the caller's are
// not, and map the object ids back to the caller's indices.
template <typename Plan, typename Record, typename Fn>
Result<Plan> InTaskOrder(std::span<const Record> records, Fn&& fn) {
  const bool sorted = std::is_sorted(records.begin(), records.end(), [](const Record& a, const Record& b) {
    return a.first_task < b.first_task;
  });
  if (sorted) return fn(records);
  // (first task, index) pairs sort in memory order, several times faster at
  // 10^6 records than a stable sort of indices through the records.
  std::vector<std::pair<TaskIndex, std::size_t>> keyed(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) keyed[i] = {records[i].first_task, i};
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::size_t> order(records.size());
  for (std::size_t k = 0; k < keyed.size(); ++k) order[k] = keyed[k].second;
  keyed = {};
  std::vector<Record> sorted_records;
  sorted_records.reserve(records.size());
  for (std::size_t i : order) sorted_records.push_back(records[i]);
  TM_ASSIGN_OR_RETURN(Plan plan, fn(std::span<const Record>(sorted_records)));
  std::vector<std::size_t> object_of(records.size());
  for (std::size_t k = 0; k < order.size(); ++k) object_of[order[k]] = plan.object_of[k];
  plan.object_of = std::move(object_of);
  return plan;
}

// Checks a reallocation graph against the records and renumbers it into the
// (stable) task order InTaskOrder gives the strategies, each list sorted.
Result<ReallocationGraph> GraphInTaskOrder(std::span<const UsageRecord> records,
                                           const ReallocationGraph& graph,
                                           ObjectsStrategy strategy) {
  if (strategy != ObjectsStrategy::kGreedyInOrder)
    return InvalidArgument("a reallocation graph applies to greedy_in_order only, not " +
                           std::string(Name(strategy)));
  const std::size_t n = records.size();
  if (graph.size() != n)
    return InvalidArgument("the reallocation graph has " + std::to_string(graph.size()) +
                           " vertices for " + std::to_string(n) + " tensors");
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return records[a].first_task < records[b].first_task;
  });
  std::vector<std::size_t> position(n);
  for (std::size_t k = 0; k < n; ++k) position[order[k]] = k;
  ReallocationGraph result(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::size_t>& adjacent = result[position[i]];
    for (std::size_t v : graph[i]) {
      if (v >= n)
        return InvalidArgument("reallocation graph: tensor " + std::to_string(i) +
                               " lists neighbour " + std::to_string(v) + " but there are only " +
                               std::to_string(n) + " tensors");
      adjacent.push_back(position[v]);
    }
    std::sort(adjacent.begin(), adjacent.end());
    adjacent.erase(std::unique(adjacent.begin(), adjacent.end()), adjacent.end());
  }
  return result;
}

Result<ObjectsPlan> DispatchObjects(std::span<const UsageRecord> r, ObjectsStrategy s,
                                    const PlanParams& p) {
  const ObjectsEntry* e = Find(kObjectsTable, s);
  if (!e) return InvalidArgument("unknown objects strategy");
  return e->plan(r, p);
}

Result<ExtentObjectsPlan> DispatchObjects(std::span<const ExtentRecord> r, ObjectsStrategy s,
                                          const PlanParams& p) {
  const ObjectsEntry* e = Find(kObjectsTable, s);
  if (!e) return InvalidArgument("unknown objects strategy");
  if (!e->plan_extents) {
    std::string ok;
    for (const ObjectsEntry& x : kObjectsTable)
      if (x.plan_extents) ok += (ok.empty() ? "" : ", ") + std::string(x.name);
    return InvalidArgument("objects strategy " + std::string(e->name) +
                           " plans 1-D sizes only; for 2-D/3-D/4-D extents use " + ok);
  }
  return e->plan_extents(r, p);
}

}  // namespace

std::string_view Name(ObjectsStrategy s) {
  const ObjectsEntry* e = Find(kObjectsTable, s);
  return e ? e->name : "unknown";
}

Result<ObjectsStrategy> ParseObjectsStrategy(std::string_view name) {
  return internal::ParseName<ObjectsStrategy>(name, kObjectsStrategies, "objects strategy");
}
std::span<const ObjectsStrategy> AllObjectsStrategies() { return kObjectsStrategies; }

Result<ObjectsPlan> PlanObjects(std::span<const UsageRecord> records, ObjectsStrategy strategy,
                                const PlanParams& params) {
  TM_RETURN_IF_ERROR(CheckTimeLimitAndThreads(params));
  TM_RETURN_IF_ERROR(planning::CheckRecords(records));
  const auto start = std::chrono::steady_clock::now();
  // The strategies see records in task order: renumber the graph to match.
  PlanParams task_order_params = params;
  ReallocationGraph task_order_graph;
  if (params.reallocation_graph != nullptr) {
    TM_ASSIGN_OR_RETURN(task_order_graph,
                        GraphInTaskOrder(records, *params.reallocation_graph, strategy));
    task_order_params.reallocation_graph = &task_order_graph;
  }
  TM_ASSIGN_OR_RETURN(ObjectsPlan plan,
                      InTaskOrder<ObjectsPlan>(records, [&](std::span<const UsageRecord> r) {
                        return DispatchObjects(r, strategy, task_order_params);
                      }));
  plan.seconds = SecondsSince(start);
  if (plan.strategy.empty()) plan.strategy = std::string(Name(strategy));
  // Strategies that computed the positional maximums (best, greedy_by_size)
  // set the bound; the others leave 0. (A true bound of 0, every size 0, is
  // cheap to compute again.)
  if (plan.lower_bound == 0) plan.lower_bound = ObjectsLowerBound(records);
  if (params.validate)
    TM_RETURN_IF_ERROR(ValidateObjectsPlan(records, plan).WithContext(
        "internal error: strategy " + std::string(Name(strategy)) + " produced an invalid plan"));
  return plan;
}

Result<ExtentObjectsPlan> PlanObjects(std::span<const ExtentRecord> records,
                                      ObjectsStrategy strategy, const PlanParams& params) {
  TM_RETURN_IF_ERROR(CheckTimeLimitAndThreads(params));
  TM_RETURN_IF_ERROR(planning::CheckRecords(records));
  if (params.reallocation_graph != nullptr)
    return InvalidArgument("a reallocation graph applies to greedy_in_order on 1-D sizes only");
  for (std::size_t i = 0; i < records.size(); ++i)
    if (records[i].size.rank != records[0].size.rank || records[i].size.rank < 1)
      return InvalidArgument("tensor " + std::to_string(i) + ": extent " +
                             records[i].size.ToString() +
                             " has a different (or no) rank than tensor 0");
  const auto start = std::chrono::steady_clock::now();
  TM_ASSIGN_OR_RETURN(ExtentObjectsPlan plan,
                      InTaskOrder<ExtentObjectsPlan>(records, [&](std::span<const ExtentRecord> r) {
                        return DispatchObjects(r, strategy, params);
                      }));
  plan.seconds = SecondsSince(start);
  if (plan.strategy.empty()) plan.strategy = std::string(Name(strategy));
  if (params.validate)
    TM_RETURN_IF_ERROR(ValidateObjectsPlan(records, plan).WithContext(
        "internal error: strategy " + std::string(Name(strategy)) + " produced an invalid plan"));
  return plan;
}

namespace planning {

Result<OffsetsPlan> RunOffsetsStrategy(const Problem& problem, std::string_view name,
                                       OffsetsFn strategy, const PlanParams& params,
                                       bool reports_peak) {
  TM_RETURN_IF_ERROR(ValidateAlignment(params.alignment, "PlanParams::alignment"));
  TM_RETURN_IF_ERROR(CheckTimeLimitAndThreads(params));
  TM_RETURN_IF_ERROR(CheckProblem(problem));
  TM_RETURN_IF_ERROR(CheckFixedOffsets(problem));
  for (const Buffer& b : problem.buffers)
    if (b.fixed_offset && *b.fixed_offset % params.alignment != 0)
      return InvalidArgument("buffer '" + b.id + "' has fixed offset " +
                             std::to_string(*b.fixed_offset) +
                             ", which is not a multiple of the requested alignment " +
                             std::to_string(params.alignment));
  const auto start = std::chrono::steady_clock::now();
  TM_ASSIGN_OR_RETURN(OffsetsPlan plan, strategy(problem, params));
  plan.seconds = SecondsSince(start);
  if (plan.strategy.empty()) plan.strategy = std::string(name);
  if (!reports_peak)
    plan.lower_bound = std::max(plan.lower_bound, PeakLiveBytes(problem, params.alignment));
  if (params.validate)
    TM_RETURN_IF_ERROR(ValidateOffsetsPlan(problem, plan, params.alignment,
                                           /*enforce_capacity=*/false)
                           .WithContext("internal error: strategy " +
                                        std::string(name) +
                                        " produced an invalid plan"));
  return plan;
}

}  // namespace planning
}  // namespace tensormem
