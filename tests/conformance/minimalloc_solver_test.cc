// SPDX-License-Identifier: Apache-2.0
// ../shared/conformance/minimalloc_solver.json: MiniMalloc's solver cases
// (feasible or not at a capacity, fixed offsets, alignment, gaps with
// windows, the irreducible infeasible subset). Lifetimes there are
// half-open [lower, upper); here they become inclusive [lower, upper - 1].
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "tensormem/solver.h"
#include "tensormem/validator.h"
#include "test_util.h"

namespace tensormem {
namespace {

using nlohmann::json;

Problem FromCase(const json& c) {
  Problem p;
  p.capacity = c["capacity"].get<std::uint64_t>();
  std::size_t i = 0;
  for (const json& b : c["buffers"]) {
    Buffer buf;
    buf.id = std::to_string(i++);
    buf.first_task = b["lower"].get<TaskIndex>();
    buf.last_task = b["upper"].get<TaskIndex>() - 1;
    buf.size = b["size"].get<std::uint64_t>();
    if (b.contains("alignment")) buf.alignment = b["alignment"].get<std::uint64_t>();
    if (b.contains("offset")) buf.fixed_offset = b["offset"].get<std::uint64_t>();
    if (b.contains("gaps"))
      for (const json& g : b["gaps"]) {
        Gap gap;
        gap.first_task = g["lower"].get<TaskIndex>();
        gap.last_task = g["upper"].get<TaskIndex>() - 1;
        if (g.contains("window")) {
          gap.has_window = true;
          gap.window_lo = g["window"][0].get<std::uint64_t>();
          gap.window_hi = g["window"][1].get<std::uint64_t>();
        }
        buf.gaps.push_back(gap);
      }
    p.buffers.push_back(std::move(buf));
  }
  return p;
}

TEST(MiniMallocSolverConformance, EveryCase) {
  TM_REQUIRE_SHARED("conformance/minimalloc_solver.json");
  const json data =
      json::parse(testing::ReadFile(testing::SharedDir() / "conformance/minimalloc_solver.json"));
  int checked = 0;
  for (const json& c : data["cases"]) {
    const std::string name = c["case"].get<std::string>();
    SCOPED_TRACE(name);
    const Problem p = FromCase(c);
    ASSERT_TRUE(CheckProblem(p).ok()) << CheckProblem(p).ToString();
    SolverParams params;
    params.goal = SolveGoal::kFit;
    params.time_limit_seconds = 30;
    params.compute_iis = c.contains("expect_irreducible_infeasible_subset");
    Result<SolveResult> r = SolveOffsets(p, params);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (c["feasible"].get<bool>()) {
      ASSERT_TRUE(r->status == SolveStatus::kOptimal || r->status == SolveStatus::kFeasible)
          << Name(r->status) << ": " << r->reason;
      ASSERT_TRUE(r->has_plan);
      const Status valid = ValidateOffsetsPlan(p, r->plan);
      EXPECT_TRUE(valid.ok()) << valid.ToString();
      EXPECT_LE(r->height, *p.capacity);
      if (c.contains("expect_offsets")) {
        for (const auto& [id, offset] : c["expect_offsets"].items()) {
          EXPECT_EQ(r->plan.offsets[std::stoul(id)], offset.get<std::uint64_t>()) << "buffer " << id;
        }
      }
    } else {
      EXPECT_EQ(r->status, SolveStatus::kInfeasible) << Name(r->status);
      EXPECT_GT(r->lower_bound, *p.capacity);
      if (params.compute_iis) {
        EXPECT_EQ(r->infeasible_subset,
                  c["expect_irreducible_infeasible_subset"].get<std::vector<std::size_t>>());
        EXPECT_TRUE(r->subset_irreducible);
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 16);
  std::printf("[ conformance ] minimalloc_solver.json: %d cases reproduced\n", checked);
}

// The README example: minimising finds height 12 (= peak live bytes).
TEST(MiniMallocSolverConformance, ReadmeExampleIsOptimalAtTwelve) {
  TM_REQUIRE_SHARED("conformance/minimalloc_solver.json");
  const json data =
      json::parse(testing::ReadFile(testing::SharedDir() / "conformance/minimalloc_solver.json"));
  for (const json& c : data["cases"]) {
    if (c["case"] != "ReadmeExample") continue;
    Problem p = FromCase(c);
    p.capacity.reset();
    Result<SolveResult> r = SolveOffsets(p, SolverParams{});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, SolveStatus::kOptimal);
    EXPECT_EQ(r->height, 12u);
    EXPECT_TRUE(ValidateOffsetsPlan(p, r->plan).ok());
  }
}

}  // namespace
}  // namespace tensormem
