// SPDX-License-Identifier: Apache-2.0
// ../shared/conformance/tflite_arena.json, part "arena": SimpleMemoryArena
// fed allocations in call order with an alignment. (Part "graphs" belongs to
// the graph planner's tests.)
#include <nlohmann/json.hpp>
#include <numeric>

#include <gtest/gtest.h>

#include "planning/offsets/best_fit.h"
#include "test_util.h"
#include "tensormem/planning.h"

namespace tensormem {
namespace {

using nlohmann::json;

TEST(TfliteArenaConformance, ArenaInCallOrder) {
  TM_REQUIRE_SHARED("conformance/tflite_arena.json");
  const json data = json::parse(testing::ReadFile(testing::SharedDir() / "conformance/tflite_arena.json"));
  int checked = 0;
  for (const json& c : data["arena"]) {
    SCOPED_TRACE(c["case"].get<std::string>());
    std::vector<UsageRecord> records;
    for (const json& a : c["allocs"])
      records.push_back({a[0].get<std::uint64_t>(), a[1].get<TaskIndex>(), a[2].get<TaskIndex>()});
    std::vector<std::size_t> order(records.size());
    std::iota(order.begin(), order.end(), 0);
    const auto align = c["alignment"].get<std::uint64_t>();
    Result<OffsetsPlan> fast = planning::PlaceBestFit(FromRecords(records), order, align);
    Result<OffsetsPlan> ref = planning::PlaceBestFitReference(records, order, align);
    ASSERT_TRUE(fast.ok() && ref.ok());
    EXPECT_EQ(fast->offsets, c["offsets"].get<std::vector<std::uint64_t>>());
    EXPECT_EQ(ref->offsets, c["offsets"].get<std::vector<std::uint64_t>>());
    checked += static_cast<int>(c["offsets"].size());
  }
  std::printf("[ conformance ] tflite_arena.json arena: %d offsets compared\n", checked);
}

}  // namespace
}  // namespace tensormem
