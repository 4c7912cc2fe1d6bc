// SPDX-License-Identifier: Apache-2.0
// The offsets dispatcher: PlanOffsets over the table of every offsets
// strategy. It sits above the solver because best and exact are built on
// it; the checks, timing, lower bound and validation it shares with the
// heuristics' own callers are planning::RunOffsetsStrategy.
#include <array>
#include <string>

#include "core/parse_name.h"
#include "planning/check_records.h"
#include "planning/offsets/offsets_strategies.h"
#include "strategies/strategies.h"
#include "tensormem/planning.h"

namespace tensormem {
namespace {

// The offsets family's table: enum value, name, implementation. Adding a
// strategy is one row here (plus its enum value and its file).
struct OffsetsEntry {
  OffsetsStrategy strategy;
  std::string_view name;
  planning::OffsetsFn plan;
};

constexpr std::array<OffsetsEntry, 8> kOffsetsTable = {{
    {OffsetsStrategy::kNaive, "naive", planning::NaiveOffsets},
    {OffsetsStrategy::kGreedyInOrder, "greedy_in_order", planning::GreedyInOrderOffsets},
    {OffsetsStrategy::kGreedyBySize, "greedy_by_size", planning::GreedyBySizeOffsets},
    {OffsetsStrategy::kGreedyByBreadth, "greedy_by_breadth", planning::GreedyByBreadthOffsets},
    {OffsetsStrategy::kFromObjects, "from_objects", planning::FromObjectsOffsets},
    {OffsetsStrategy::kArena, "arena", planning::ArenaOffsets},
    {OffsetsStrategy::kBest, "best", planning::BestOffsets},
    {OffsetsStrategy::kExact, "exact", planning::ExactOffsets},
}};

constexpr auto kOffsetsStrategies = [] {
  std::array<OffsetsStrategy, kOffsetsTable.size()> out{};
  for (std::size_t i = 0; i < kOffsetsTable.size(); ++i) out[i] = kOffsetsTable[i].strategy;
  return out;
}();

const OffsetsEntry* Find(OffsetsStrategy s) {
  for (const OffsetsEntry& e : kOffsetsTable)
    if (e.strategy == s) return &e;
  return nullptr;
}

// An enum value outside the table: reported after the problem's own checks.
Result<OffsetsPlan> UnknownStrategy(const Problem&, const PlanParams&) {
  return InvalidArgument("unknown offsets strategy");
}

}  // namespace

std::string_view Name(OffsetsStrategy s) {
  const OffsetsEntry* e = Find(s);
  return e ? e->name : "unknown";
}

Result<OffsetsStrategy> ParseOffsetsStrategy(std::string_view name) {
  return internal::ParseName<OffsetsStrategy>(name, kOffsetsStrategies, "offsets strategy");
}
std::span<const OffsetsStrategy> AllOffsetsStrategies() { return kOffsetsStrategies; }

Result<OffsetsPlan> PlanOffsets(const Problem& problem, OffsetsStrategy strategy,
                                const PlanParams& params) {
  const OffsetsEntry* e = Find(strategy);
  return planning::RunOffsetsStrategy(problem, Name(strategy), e ? e->plan : UnknownStrategy,
                                      params, /*reports_peak=*/strategy == OffsetsStrategy::kBest);
}

Result<OffsetsPlan> PlanOffsets(std::span<const UsageRecord> records, OffsetsStrategy strategy,
                                const PlanParams& params) {
  TM_RETURN_IF_ERROR(planning::CheckRecords(records));
  return PlanOffsets(FromRecords(records), strategy, params);
}

}  // namespace tensormem
