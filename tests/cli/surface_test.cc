// SPDX-License-Identifier: Apache-2.0
// One behaviour on every surface, the CLI's side: options that cannot apply
// to what was asked are errors saying why, checked before any work; the
// names in --help come from the library's tables; the defaults are
// tensormem/defaults.h's (python/tests/test_defaults.py compares the CLI
// with Python).
#include <string>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "harness/replay.h"
#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/defaults.h"
#include "tensormem/graph.h"
#include "tensormem/planning.h"
#include "tensormem/solver.h"
#include "test_util.h"

namespace tensormem {
namespace {

testing::ShellRun Cli(const std::string& args) { return testing::RunShell(testing::CliPath() + " " + args); }

class SurfaceTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    if (testing::CliPath().empty()) GTEST_SKIP() << "the CLI was not built";
    TempDirTest::SetUp();
    five_ = Write("five.csv", "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n");
    trace_ = Write("trace.csv",
                   "Thread,Time,Action,Pointer,Size,Stream\n0,1,allocate,0x1000,1000,0\n"
                   "0,2,allocate,0x2000,3000000,0\n0,3,free,0x1000,1000,0\n0,4,free,0x2000,3000000,0\n");
  }
  // Refused with exit code 2, saying `why`, and nothing printed on stdout
  // (no work was done).
  void ExpectRefused(const std::string& args, const std::string& why) {
    const testing::ShellRun r = testing::RunShell("{ " + testing::CliPath() + " " + args + " 2>/dev/null; }");
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(r.out, "") << args;
    const testing::ShellRun e = Cli(args);
    EXPECT_NE(e.out.find(why), std::string::npos) << args << "\n" << e.out;
  }
  std::string five_, trace_;
};

TEST(Defaults, EveryParameterStructStartsFromTheTable) {
  EXPECT_EQ(PlanParams{}.alignment, defaults::kPlanAlignment);
  EXPECT_EQ(SolverParams{}.alignment, defaults::kPlanAlignment);
  EXPECT_EQ(GraphPlanParams{}.alignment, defaults::kTensorAlignment);
  EXPECT_EQ(ReplayParams{}.alignment, defaults::kTensorAlignment);
  EXPECT_EQ(ReplayParams{}.repetitions, defaults::kReplayRepetitions);
  EXPECT_EQ(ReplayParams{}.warm_passes, defaults::kReplayWarmPasses);
  EXPECT_EQ(PlanParams{}.time_limit_seconds, defaults::kTimeLimitSeconds);
  EXPECT_EQ(SolverParams{}.time_limit_seconds, defaults::kTimeLimitSeconds);
  EXPECT_EQ(PlanParams{}.polish_nodes, defaults::kPolishNodes);
  EXPECT_EQ(PlanParams{}.polish_seconds, defaults::kPolishSeconds);
  EXPECT_EQ(PlanParams{}.polish_time_share, defaults::kPolishTimeShare);
}

TEST(Defaults, CompactBfcIsOnePreset) {
  EXPECT_EQ(ReplayAllocatorOf(BfcPreset::kCompact), ReplayAllocator::kBfcCompact);
  EXPECT_EQ(ReplayAllocatorOf(BfcPreset::kTensorflow), ReplayAllocator::kBfc);
  const BfcParams compact = BfcPresetParams(BfcPreset::kCompact);
  EXPECT_EQ(compact.growth, CompactBfcParams().growth);
  EXPECT_TRUE(compact.coalesce_regions);
  EXPECT_TRUE(BfcPresetUsesVirtualMemory(BfcPreset::kCompact));
  EXPECT_FALSE(BfcPresetUsesVirtualMemory(BfcPreset::kTensorflow));
  EXPECT_EQ(ReplayParams{}.bfc_compact.coalesce_regions, true);
  ASSERT_TRUE(ParseBfcPreset("compact").ok());
  EXPECT_NE(ParseBfcPreset("tuned").status().message().find("tensorflow, compact"), std::string::npos);
}

TEST_F(SurfaceTest, TheDefaultsAreTheTables) {
  testing::ShellRun r = Cli("plan " + five_ + " -s naive --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["alignment"], defaults::kPlanAlignment);
  r = Cli("replay " + trace_ + " -a pool --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["alignment"], defaults::kTensorAlignment);
  EXPECT_EQ(j["repetitions"], defaults::kReplayRepetitions);
  EXPECT_EQ(j["warm_passes"], defaults::kReplayWarmPasses);
}

TEST_F(SurfaceTest, HelpListsTheNamesOfTheTables) {
  const std::string plan = Cli("plan --help").out;
  for (OffsetsStrategy s : AllOffsetsStrategies()) EXPECT_NE(plan.find(Name(s)), std::string::npos) << Name(s);
  for (ObjectsStrategy s : AllObjectsStrategies()) EXPECT_NE(plan.find(Name(s)), std::string::npos) << Name(s);
  const std::string replay = Cli("replay --help").out;
  for (ReplayAllocator a : AllReplayAllocators()) EXPECT_NE(replay.find(Name(a)), std::string::npos) << Name(a);
  for (BfcPreset p : AllBfcPresets()) EXPECT_NE(replay.find(Name(p)), std::string::npos) << Name(p);
  for (BfcGrowth g : AllBfcGrowths()) EXPECT_NE(replay.find(Name(g)), std::string::npos) << Name(g);
}

TEST_F(SurfaceTest, ReplayOptionsThatApplyToNoAllocatorAsked) {
  ExpectRefused("replay " + trace_ + " -a malloc --bfc-growth on_demand", "none was asked for");
  ExpectRefused("replay " + trace_ + " -a pool --bfc-preset compact", "none was asked for");
  ExpectRefused("replay " + trace_ + " -a bfc,pool --vmm-limit 4194304", "vmm allocator, which was not asked for");
  ExpectRefused("replay " + trace_ + " -a bfc_compact --bfc-backend host", "always over virtual memory");
  ExpectRefused("replay " + trace_ + " -a bfc --bfc-coalesce-regions", "needs virtual memory");
  ExpectRefused("replay " + trace_ + " -a pool --cuda-device 1", "--device cuda");
  ExpectRefused("replay " + trace_ + " -a pool --device cuda --no-isolate", "--no-isolate changes nothing with --device cuda");
  ExpectRefused("replay " + trace_ + " -a pool --device cuda --no-page-writes",
                "--no-page-writes changes nothing with --device cuda");
  ExpectRefused("replay " + trace_ + " -a malloc --html " + (dir_ / "map.html").string(), "malloc peers");
  ExpectRefused("replay " + trace_ + " -a pool --html " + trace_, "");
  ExpectRefused("replay " + trace_ + " -a bfc_compact,bfc --bfc-preset compact", "listed twice");
  ExpectRefused("replay " + trace_ + " -a nope", "bfc, bfc_compact, vmm");
  // What does apply runs: bfc under the compact preset is bfc_compact, and
  // --bfc-* change it too.
  const testing::ShellRun r = Cli("replay " + trace_ + " -a bfc --bfc-preset compact --bfc-initial-region 4194304 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["allocator"], "bfc_compact");
  EXPECT_EQ(j["results"][0]["peak_held"], 4u << 20);
}

// --no-page-writes: reserved is the allocator's own statistic, and the
// figures say so.
TEST_F(SurfaceTest, ReplayWithoutPageWritesReportsTheAllocatorsStatistic) {
  const testing::ShellRun r = Cli("replay " + trace_ + " -a bfc_compact,malloc -r 1 --no-page-writes --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["page_writes"], false);
  ASSERT_EQ(j["results"].size(), 2u);
  for (const nlohmann::json& row : j["results"]) {
    EXPECT_EQ(row["peak_reserved"], row["peak_held"]) << row.dump();
    EXPECT_NE(row["reserved_source"].get<std::string>().find("the caller asked for no pages written"),
              std::string::npos)
        << row.dump();
  }
}

TEST_F(SurfaceTest, PlanOptionsThatCannotApply) {
  ExpectRefused("plan " + five_ + " --objects -s exact", "plans offsets; shared objects strategies: ");
  ExpectRefused("plan " + five_ + " -s equality", "plans shared objects (--objects)");
  ExpectRefused("plan " + five_ + " --dim batch=2", "is a problem file");
  // Every output onto the input is refused before planning.
  for (const char* flag : {"--out", "--svg", "--html"}) ExpectRefused("plan " + five_ + " " + flag + " " + five_, "");
}

// --threads and --reference change only some strategies: refused, naming
// those, when none of the strategies asked for reads them; accepted when one
// does (with 'all' too).
TEST_F(SurfaceTest, PlanStrategyOptionsThatNoStrategyAskedReads) {
  ExpectRefused("plan " + five_ + " -s greedy_by_size --threads 2",
                "--threads changes only the offsets strategy best; not greedy_by_size");
  ExpectRefused("plan " + five_ + " --objects -s best --threads 0", "--threads changes no shared-objects");
  ExpectRefused("plan " + five_ + " --objects -s all --threads 2", "--threads changes no shared-objects");
  ExpectRefused("plan " + five_ + " -s naive --reference",
                "--reference changes only the offsets strategies greedy_in_order, greedy_by_size, "
                "greedy_by_breadth, from_objects, best; not naive");
  ExpectRefused("plan " + five_ + " -s arena --reference", "not arena");
  ExpectRefused("plan " + five_ + " -s exact --reference", "not exact");
  ExpectRefused("plan " + five_ + " --objects -s equality --reference", "; not equality");
  for (const std::string args : {"-s best --threads 2", "-s all --threads 2", "-s greedy_by_size --threads 1",
                                 "-s greedy_by_size --reference", "-s all --reference",
                                 "--objects -s tightest_fit --reference", "--objects -s all --reference"}) {
    const testing::ShellRun r = Cli("plan " + five_ + " " + args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  }
}

// solve: the search's options when --time-limit 0 runs no search, and the
// options about a capacity when there is none.
TEST_F(SurfaceTest, SolveOptionsThatCannotApply) {
  ExpectRefused("solve " + five_ + " --time-limit 0 --nodes 100", "--nodes limits the search, and --time-limit 0");
  ExpectRefused("solve " + five_ + " --time-limit 0 --threads 2", "--threads races searches");
  ExpectRefused("solve " + five_ + " --minimize", "--minimize finds the smallest height within a capacity");
  ExpectRefused("solve " + five_ + " --iis", "--iis explains an infeasible answer, which needs a capacity");
  EXPECT_EQ(Cli("solve " + five_ + " --capacity 12 --minimize").code, 0);
  EXPECT_EQ(Cli("solve " + five_ + " --capacity 8 --iis").code, 3);
  // The input's own capacity counts.
  const std::string capped = Write("capped.json", R"({"capacity": 12, "buffers": [{"id": "a", "lower": 0, "upper": 2, "size": 4}]})");
  EXPECT_EQ(Cli("solve " + capped + " --minimize").code, 0) << Cli("solve " + capped + " --minimize").out;
}

TEST_F(SurfaceTest, RecordsOptionsThatCannotApply) {
  const std::string model = std::string(TENSORMEM_SOURCE_DIR) + "/examples/resnet18.onnx";
  ExpectRefused("records " + model + " --preserve-all-tensors --no-in-place",
                "--no-in-place changes nothing with --preserve-all-tensors");
}

TEST_F(SurfaceTest, SolveReadsAModelAsPlanDoes) {
  const std::string model = std::string(TENSORMEM_SOURCE_DIR) + "/examples/resnet18.onnx";
  const testing::ShellRun plan = Cli("plan " + model + " -s naive --json");
  if (plan.code != 0) GTEST_SKIP() << "built without the ONNX importer: " << plan.out;
  const testing::ShellRun solve = Cli("solve " + model + " --time-limit 1");
  EXPECT_EQ(solve.code, 0) << solve.out;
  const nlohmann::json j = nlohmann::json::parse(plan.out);
  EXPECT_NE(solve.out.find(std::to_string(j["buffers"].get<int>()) + " buffers"), std::string::npos) << solve.out;
  // The naive total below the table is the naive row's.
  EXPECT_EQ(j["graph"]["naive_scratch_bytes"], j["results"][0]["total"]);
}

}  // namespace
}  // namespace tensormem
