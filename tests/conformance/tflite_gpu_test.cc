// SPDX-License-Identifier: Apache-2.0
// ../shared/conformance/tflite_gpu.json: every expected id, size, offset,
// bound and graph edge of the TFLite GPU delegate's memory-management tests.
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "test_util.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"
#include "tensormem/validator.h"

namespace tensormem {
namespace {

using nlohmann::json;

const json& Data() {
  static const json data = [] {
    const auto path = testing::SharedDir() / "conformance/tflite_gpu.json";
    return std::filesystem::exists(path) ? json::parse(testing::ReadFile(path)) : json();
  }();
  return data;
}

std::vector<UsageRecord> Records(const json& j) {
  std::vector<UsageRecord> r;
  for (const json& x : j) r.push_back({x[0].get<std::uint64_t>(), x[1].get<TaskIndex>(), x[2].get<TaskIndex>()});
  return r;
}

Extent ToExtent(const json& j) {
  Extent e;
  for (const json& d : j) e.dims[static_cast<std::size_t>(e.rank++)] = d.get<std::uint64_t>();
  return e;
}

// Counts every expected value compared, printed at the end of each suite.
int g_checked = 0;

TEST(TfliteGpuConformance, SharedObjects) {
  TM_REQUIRE_SHARED("conformance/tflite_gpu.json");
  int cases = 0;
  for (const json& c : Data()["shared_objects"]) {
    const auto records = Records(c["records"]);
    for (const auto& [name, expect] : c["expect"].items()) {
      SCOPED_TRACE(c["case"].get<std::string>() + " / " + name);
      Result<ObjectsStrategy> s = ParseObjectsStrategy(name);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      for (bool reference : {false, true}) {
        PlanParams params;
        params.reference = reference;
        Result<ObjectsPlan> plan = PlanObjects(records, *s, params);
        ASSERT_TRUE(plan.ok()) << plan.status().ToString();
        EXPECT_EQ(plan->object_of, expect["ids"].get<std::vector<std::size_t>>()) << "reference=" << reference;
        EXPECT_EQ(plan->object_sizes, expect["sizes"].get<std::vector<std::uint64_t>>());
        g_checked += static_cast<int>(expect["ids"].size() + expect["sizes"].size());
      }
      ++cases;
    }
  }
  EXPECT_GT(cases, 20);
}

TEST(TfliteGpuConformance, Offsets) {
  TM_REQUIRE_SHARED("conformance/tflite_gpu.json");
  for (const json& c : Data()["offsets"]) {
    SCOPED_TRACE(c["case"].get<std::string>());
    Result<OffsetsStrategy> s = ParseOffsetsStrategy(c["strategy"].get<std::string>());
    ASSERT_TRUE(s.ok());
    for (bool reference : {false, true}) {
      PlanParams params;
      params.alignment = c["align"].get<std::uint64_t>();
      params.reference = reference;
      Result<OffsetsPlan> plan = PlanOffsets(Records(c["records"]), *s, params);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      EXPECT_EQ(plan->offsets, c["offsets"].get<std::vector<std::uint64_t>>());
      EXPECT_EQ(plan->total, c["total"].get<std::uint64_t>());
      g_checked += static_cast<int>(c["offsets"].size() + 1);
    }
  }
}

TEST(TfliteGpuConformance, LowerBoundsAndPositionalMaximums) {
  TM_REQUIRE_SHARED("conformance/tflite_gpu.json");
  std::map<std::string, std::vector<UsageRecord>> by_case;
  for (const json& c : Data()["shared_objects"]) by_case[c["case"]] = Records(c["records"]);
  for (const json& c : Data()["lower_bounds"]) {
    const auto& r = by_case.at(c["case"]);
    EXPECT_EQ(ObjectsLowerBound(r), c["objects"].get<std::uint64_t>()) << c["case"];
    EXPECT_EQ(PeakLiveBytes(r), c["offsets"].get<std::uint64_t>()) << c["case"];
    g_checked += 2;
  }
  for (const auto& [name, expect] : Data()["positional_maximums"].items()) {
    EXPECT_EQ(PositionalMaximums(by_case.at(name)), expect.get<std::vector<std::uint64_t>>()) << name;
    g_checked += static_cast<int>(expect.size());
  }
}

TEST(TfliteGpuConformance, MultidimensionalSharedObjects) {
  TM_REQUIRE_SHARED("conformance/tflite_gpu.json");
  for (const json& c : Data()["multidimensional_shared_objects"]) {
    std::vector<ExtentRecord> records;
    for (const json& x : c["records"])
      records.push_back({ToExtent(x[0]), x[1].get<TaskIndex>(), x[2].get<TaskIndex>()});
    for (const auto& [name, expect] : c["expect"].items()) {
      SCOPED_TRACE(c["case"].get<std::string>() + " / " + name);
      Result<ExtentObjectsPlan> plan = PlanObjects(records, *ParseObjectsStrategy(name));
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      EXPECT_EQ(plan->object_of, expect["ids"].get<std::vector<std::size_t>>());
      std::vector<Extent> sizes;
      for (const json& e : expect["sizes"]) sizes.push_back(ToExtent(e));
      EXPECT_EQ(plan->object_sizes, sizes);
      g_checked += static_cast<int>(expect["ids"].size() + expect["sizes"].size());
    }
  }
}

TEST(TfliteGpuConformance, ObjectsToOffsets) {
  TM_REQUIRE_SHARED("conformance/tflite_gpu.json");
  for (const json& c : Data()["objects_to_offsets"]) {
    ObjectsPlan objects;
    objects.object_sizes = c["object_sizes"].get<std::vector<std::uint64_t>>();
    objects.object_of = c["object_ids"].get<std::vector<std::size_t>>();
    Result<OffsetsPlan> plan = ObjectsToOffsets(objects);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->offsets, c["offsets"].get<std::vector<std::uint64_t>>());
    g_checked += static_cast<int>(c["offsets"].size());
  }
}

TEST(TfliteGpuConformance, ReallocationGraph) {
  TM_REQUIRE_SHARED("conformance/tflite_gpu.json");
  for (const json& c : Data()["reallocation_graph"]) {
    const auto deps = c["dependencies"].get<std::vector<std::vector<std::size_t>>>();
    EXPECT_EQ(BuildReallocationGraph(deps), c["expect"].get<ReallocationGraph>()) << c["case"];
    for (const json& e : c["expect"]) g_checked += static_cast<int>(e.size());
  }
}

TEST(TfliteGpuConformance, Summary) {
  TM_REQUIRE_SHARED("conformance/tflite_gpu.json");
  std::printf("[ conformance ] tflite_gpu.json: %d expected values compared (fast and reference paths)\n",
              g_checked);
}

}  // namespace
}  // namespace tensormem
