// SPDX-License-Identifier: Apache-2.0
// The CLI contract: output formats, files written, exit codes (0 ok, 2 bad
// input) and error messages naming file, line and field.
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "harness/generators.h"
#include "tensormem/defaults.h"
#include "tensormem/io.h"
#include "tensormem/planning.h"
#include "tensormem/solver_tuning.h"
#include "tensormem/validator.h"
#include "test_util.h"

namespace tensormem {
namespace {

namespace fs = std::filesystem;

using CliRun = testing::ShellRun;

CliRun Cli(const std::string& args) { return testing::RunShell(testing::CliPath() + " " + args); }

class CliTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    if (testing::CliPath().empty()) GTEST_SKIP() << "the CLI was not built";
    TempDirTest::SetUp();
  }
};

const char* kFive = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n";

TEST_F(CliTest, PlanPrintsTotalBoundRatioAndWritesThePlan) {
  const std::string in = Write("five.csv", kFive);
  const std::string out = (dir_ / "plan.csv").string();
  const std::string svg = (dir_ / "map.svg").string();
  CliRun r = Cli("plan " + in + " --strategy greedy_by_size --out " + out + " --svg " + svg);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("greedy_by_size"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.000"), std::string::npos) << r.out;
  std::ifstream f(out);
  Result<Problem> planned = ReadProblemCsv(f, out);
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  EXPECT_EQ(planned->buffers[0].id, "b1");
  OffsetsPlan plan;
  std::uint64_t total = 0;
  for (const Buffer& b : planned->buffers) {
    plan.offsets.push_back(*b.fixed_offset);
    total = std::max(total, *b.fixed_offset + b.size);
  }
  plan.total = total;
  EXPECT_EQ(total, 12u);
  EXPECT_TRUE(ValidateOffsetsPlan(*planned, plan).ok());
  EXPECT_NE(testing::ReadFile(svg).find("</svg>"), std::string::npos);
}

TEST_F(CliTest, AllStrategiesAsJson) {
  const std::string in = Write("five.csv", kFive);
  CliRun r = Cli("plan " + in + " --strategy all --json --time-limit 1 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["buffers"], 5);
  EXPECT_EQ(j["lower_bound"], 12);
  ASSERT_EQ(j["results"].size(), AllOffsetsStrategies().size());
  std::size_t k = 0;
  for (const auto& row : j["results"]) {
    EXPECT_GE(row["total"].get<std::uint64_t>(), 12u) << row;
    EXPECT_TRUE(row.contains("ratio") && row.contains("ms") && row.contains("strategy"));
    // In the library's order ("best(greedy_by_size)" names best's winner).
    EXPECT_EQ(row["strategy"].get<std::string>().rfind(std::string(Name(AllOffsetsStrategies()[k++])), 0), 0u)
        << row;
  }
}

// plan -s best: what its exact polish spent is in the JSON row and in a
// line under the table, when it ran: here the heuristics miss the bound
// (160 bytes against a peak of 144); on kFive they reach it.
TEST_F(CliTest, PlanShowsWhatBestsPolishSpent) {
  const std::string in = Write("misses.csv",
                               "id,lower,upper,size\n0,3,5,48\n1,0,1,48\n2,3,7,48\n3,2,5,32\n4,5,6,64\n"
                               "5,2,6,16\n6,2,3,64\n");
  CliRun r = Cli("plan " + in + " -s best --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto row = nlohmann::json::parse(r.out)["results"][0];
  EXPECT_EQ(row["total"], 144) << row;
  ASSERT_TRUE(row.contains("polish_ms") && row.contains("polish_nodes")) << row;
  EXPECT_LE(row["polish_nodes"].get<std::uint64_t>(), defaults::kPolishNodes);
  EXPECT_LE(row["polish_ms"].get<double>(), row["ms"].get<double>());
  r = Cli("plan " + in + " -s best");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("exact polish"), std::string::npos) << r.out;
  const std::string five = Write("five.csv", kFive);
  r = Cli("plan " + five + " -s best --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(nlohmann::json::parse(r.out)["results"][0].contains("polish_ms")) << r.out;
  r = Cli("plan " + five + " -s best");
  EXPECT_EQ(r.out.find("exact polish"), std::string::npos) << r.out;
}

// plan --threads: best's candidates on threads, the plan of one thread;
// out of range is refused with exit 2 naming the flag. One buffer more than
// PlanParams::polish_max_buffers, so that best does not polish: the polish's
// safety cap of polish_seconds makes its plan depend on the machine's speed
// (in an ASan build the two runs differed), and it runs after the threads.
TEST_F(CliTest, PlanOnThreadsWritesTheOneThreadPlan) {
  std::ostringstream csv;
  const std::size_t n = PlanParams{}.polish_max_buffers + 1;
  ASSERT_TRUE(WriteProblemCsv(csv, FromRecords(internal::GenerateNetworkRecords(n, 5))).ok());
  const std::string in = Write("network.csv", csv.str());
  const std::string one = (dir_ / "one.csv").string(), two = (dir_ / "two.csv").string();
  ASSERT_EQ(Cli("plan " + in + " -s best --threads 1 -o " + one).code, 0);
  CliRun r = Cli("plan " + in + " -s best --threads 2 -o " + two);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(testing::ReadFile(one), testing::ReadFile(two));
  r = Cli("plan " + in + " --threads 1000 2>&1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--threads"), std::string::npos) << r.out;
}

// solve --start: a plan to start from (id,offset rows or what -o wrote),
// checked; a bad one is refused with exit 2, naming the file and the buffer.
TEST_F(CliTest, SolveStartsFromAGivenPlan) {
  const std::string in = Write("five.csv", kFive);
  // Valid, 16 bytes high; the optimum is 12.
  // Columns in either order.
  const std::string start = Write("start.csv", "offset,id\n0,b1\n0,b2\n4,b3\n8,b4\n12,b5\n");
  CliRun r = Cli("solve " + in + " --start " + start + " --json --time-limit 5");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["start"], 16);
  EXPECT_EQ(j["height"], 12);
  EXPECT_EQ(j["status"], "optimal");

  // What -o writes is a start too: the search begins at its height.
  const std::string out = (dir_ / "out.csv").string();
  ASSERT_EQ(Cli("solve " + in + " --time-limit 5 -o " + out).code, 0);
  r = Cli("solve " + in + " --start " + out + " --json --time-limit 0");
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["start"], 12);
  EXPECT_EQ(j["height"], 12);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"id,offset\nb1,0\nb2,0\nb3,4\nb4,8\nzz,12\n", "buffer 'zz' is not in the input"},
      {"id,offset\nb1,0\nb2,0\nb3,4\nb4,8\n", "no offset for buffer 'b5'"},
      {"id,offset\nb1,0\nb1,0\nb2,0\nb3,4\nb4,8\nb5,12\n", "buffer 'b1' has two offsets"},
      {"id,offset\nb1,0\nb2,0\nb3,0\nb4,8\nb5,12\n", "not a plan of the input"},
      {"id,offset\nb1,-4\nb2,0\nb3,4\nb4,8\nb5,12\n", ":2: field 'offset': negative"},
      {"id,offset\nb1,x\nb2,0\nb3,4\nb4,8\nb5,12\n", ":2: field 'offset': not a number"},
      {"id,offset\nb1,0,1\n", ":2: expected 2 fields"},
      {"id,offset\nb1,0\nb2,18446744073709551615\nb3,4\nb4,8\nb5,12\n", "offset + size overflows"},
      {"id,lower,upper,size\nb1,0,3,4\n", "buffer 0 ('b1') has no offset"},
      // Neither form: the message says both.
      {"id\nb1\n", "(a plan is id,offset rows, or a problem file with an offset per buffer)"},
  };
  for (std::size_t k = 0; k < bad.size(); ++k) {
    const std::string path = Write("bad" + std::to_string(k) + ".csv", bad[k].first);
    r = Cli("solve " + in + " --start " + path + " --time-limit 1");
    EXPECT_EQ(r.code, 2) << k << "\n" << r.out;
    EXPECT_NE(r.out.find("--start " + path), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(bad[k].second), std::string::npos) << k << "\n" << r.out;
  }
  r = Cli("solve " + in + " --start " + (dir_ / "missing.csv").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cannot open"), std::string::npos) << r.out;
  // The output may not overwrite the start.
  r = Cli("solve " + in + " --start " + start + " --out " + start);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("refusing to overwrite"), std::string::npos) << r.out;
}

// solve --threads: a race of searches answers as one search does (a plan in
// the input's ids, checked by --start's validator on the way back in).
TEST_F(CliTest, SolveWithThreads) {
  const std::string in = Write("five.csv", kFive);
  const std::string out = (dir_ / "raced.csv").string();
  CliRun r = Cli("solve " + in + " --threads 3 --json --time-limit 5 -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["threads"], 3);
  EXPECT_EQ(j["height"], 12);
  EXPECT_EQ(j["status"], "optimal");
  EXPECT_GE(j["heuristic"], 12);
  r = Cli("solve " + in + " --start " + out + " --json --time-limit 0");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["start"], 12);
  r = Cli("solve " + in + " --threads 3 --capacity 11 --iis --json --time-limit 5");
  EXPECT_EQ(r.code, 3) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "infeasible");
  EXPECT_FALSE(j["infeasible_subset_ids"].empty());
  // Proven from the peak before any heuristic ran: no heuristic height, not 0.
  EXPECT_TRUE(j["heuristic"].is_null()) << r.out;
}

// solve --tuning fit_descent=false: the fit question with slack searches at
// the capacity alone (SolverTuning::fit_descent, echoed in the JSON's
// "tuning" with the other knobs off their defaults); the answer is the same
// question's.
TEST_F(CliTest, SolveWithoutTheFitDescent) {
  const std::string in = Write("five.csv", kFive);
  for (const bool off : {false, true}) {
    CliRun r =
        Cli("solve " + in + " --capacity 14 --json --time-limit 5" + (off ? " --tuning fit_descent=false" : ""));
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["tuning"].contains("fit_descent"), off) << r.out;
    if (off) {
      EXPECT_EQ(j["tuning"]["fit_descent"], "false") << r.out;
    }
    EXPECT_EQ(j["goal"], "fit");
    EXPECT_LE(j["height"].get<std::uint64_t>(), 14u);
    if (off) {
      EXPECT_EQ(j["fit_descent_turns"], 0) << r.out;
    }
  }
}

// solve --tuning: every key of the table is in --help with its default;
// an unknown key, a bad value, a value out of range or no '=' is exit 2 with
// a message naming it, before the input is read; a later assignment wins.
TEST_F(CliTest, SolveTuningKeysAndErrors) {
  const CliRun help = Cli("solve --help");
  ASSERT_EQ(help.code, 0) << help.out;
  for (const TuningKey& k : TuningKeys())
    EXPECT_NE(help.out.find("  " + std::string(k.name) + "="), std::string::npos) << k.name;
  EXPECT_EQ(help.out.find("SolverParams"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("MiniMalloc J"), std::string::npos) << help.out;
  const std::string in = Write("five.csv", kFive);
  const std::pair<const char*, const char*> bad[] = {
      {"no_such_key=1", "no_such_key"},          {"fit_descent=maybe", "fit_descent"},
      {"fit_descent_share=2", "fit_descent_share"}, {"probe_node_budget=-1", "probe_node_budget"},
      {"portfolio=other", "portfolio"},          {"decompose", "decompose"}};
  for (const auto& [arg, named] : bad) {
    const CliRun r = Cli("solve missing-input.csv --tuning " + std::string(arg));
    EXPECT_EQ(r.code, 2) << arg << ": " << r.out;
    EXPECT_NE(r.out.find(named), std::string::npos) << arg << ": " << r.out;
    EXPECT_EQ(r.out.find("missing-input"), std::string::npos) << arg << ": " << r.out;
  }
  const CliRun r = Cli("solve " + in + " --json --tuning weighted_share=0.25 --tuning weighted_share=0");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tuning"]["weighted_share"], "0") << r.out;
}

// solve --tuning portfolio=weighted: the weighted restarting search alone
// (WeightedRestartsPortfolio, echoed in the JSON) is complete: the same
// proven minimum as the portfolio's, and a proof that nothing fits below it.
TEST_F(CliTest, SolveWithWeightedRestarts) {
  const std::string in = Write("five.csv", kFive);
  std::uint64_t heights[2] = {0, 0};
  for (const bool weighted : {false, true}) {
    const std::string flag = weighted ? " --tuning portfolio=weighted" : "";
    CliRun r = Cli("solve " + in + " --json --time-limit 5" + flag);
    ASSERT_EQ(r.code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["tuning"].value("portfolio", "default"), weighted ? "weighted" : "default") << r.out;
    EXPECT_EQ(j["weighted_turn"], false) << r.out;  // proven at once: no turn
    EXPECT_EQ(j["status"], "optimal") << r.out;
    heights[weighted] = j["height"].get<std::uint64_t>();
    r = Cli("solve " + in + " --json --time-limit 5 --capacity " + std::to_string(heights[weighted] - 1) + flag);
    EXPECT_EQ(r.code, 3) << r.out;
    j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["status"], "infeasible") << r.out;
  }
  EXPECT_EQ(heights[0], heights[1]);
}

TEST_F(CliTest, BadInputExitsWithTwoAndNamesFileLineField) {
  CliRun r = Cli("plan " + Write("bad.csv", "id,lower,upper,size\na,0,1,4\nb,0,1,x\n"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bad.csv:3: field 'size': not a number: 'x'"), std::string::npos) << r.out;

  r = Cli("plan " + Write("empty.csv", ""));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("empty file"), std::string::npos) << r.out;

  r = Cli("plan " + Write("neg.csv", "id,lower,upper,size\na,0,1,-3\n"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("negative"), std::string::npos) << r.out;

  r = Cli("plan " + Write("order.csv", "id,lower,upper,size\na,4,4,3\n"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("field 'upper'"), std::string::npos) << r.out;

  r = Cli("plan " + Write("dup.csv", "id,lower,upper,size\na,0,1,3\na,0,2,3\n"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("duplicate id 'a'"), std::string::npos) << r.out;

  r = Cli("plan " + Write("cols.csv", "id,lower,size\n"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("missing column"), std::string::npos) << r.out;

  r = Cli("plan " + (dir_ / "missing.csv").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("cannot open"), std::string::npos) << r.out;

  r = Cli("plan " + Write("five.csv", kFive) + " --strategy nonsense");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown offsets strategy 'nonsense'"), std::string::npos) << r.out;

  r = Cli("plan " + Write("five2.csv", kFive) + " --align 0");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST_F(CliTest, SizesWhoseSumOverflowsAreReportedNotWrapped) {
  const std::string in = Write("big.csv",
                               "id,lower,upper,size\na,0,2,9223372036854775808\n"
                               "b,0,2,9223372036854775808\nc,5,6,9223372036854775808\n");
  CliRun r = Cli("plan " + in + " --strategy naive");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("overflows 64 bits"), std::string::npos) << r.out;
  r = Cli("plan " + in + " --strategy greedy_by_size");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("overflows a 64-bit arena"), std::string::npos) << r.out;
  // Huge but disjoint in time: plans fine.
  const std::string ok = Write("big_ok.csv",
                               "id,lower,upper,size\na,0,2,9223372036854775808\n"
                               "b,2,4,9223372036854775808\n");
  r = Cli("plan " + ok + " --strategy greedy_by_size");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST_F(CliTest, ZeroByteTensorsTakeNoMemory) {
  const std::string in = Write("zero.csv", "id,lower,upper,size\na,0,5,0\nb,1,3,16\nc,2,4,0\n");
  CliRun r = Cli("plan " + in + " --strategy greedy_by_size --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["results"][0]["total"], 16);
}

TEST_F(CliTest, AMillionRecordsPlanInSeconds) {
  // A deep chain with skip connections, written as CSV.
  std::ostringstream csv;
  csv << "id,lower,upper,size\n";
  std::mt19937_64 rng(1);
  for (int i = 0; i < 1000000; ++i)
    csv << 't' << i << ',' << i << ',' << (i + 2 + static_cast<int>(rng() % 8)) << ','
        << (64 + rng() % 100000) << '\n';
  const std::string in = Write("million.csv", csv.str());
  // The time limit (default 10 s) now covers greedy_by_size too; this test
  // is about the result, not the clock of a loaded CI machine.
  CliRun r = Cli("plan " + in + " --strategy greedy_by_size --json --time-limit 600");
  ASSERT_EQ(r.code, 0) << r.out.substr(0, 500);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["buffers"], 1000000);
  EXPECT_LE(j["results"][0]["ratio"].get<double>(), 1.5);
}

// Issue 12 item 11: --time-limit covers every strategy, not only exact; the
// time to read the input is reported apart from it.
TEST_F(CliTest, TheTimeLimitCoversEveryStrategyAndReadingIsReportedApart) {
  std::ostringstream csv;  // (+ on std::string trips GCC 12's -Wrestrict here)
  csv << "id,lower,upper,size\n";
  for (int i = 0; i < 20'000; ++i)
    csv << 'b' << i << ',' << i / 2 << ',' << i / 2 + 1 + i % 7 << ',' << 64 * (1 + i % 13) << '\n';
  const std::string in = Write("many.csv", csv.str());
  for (const char* strategy : {"best", "greedy_by_size", "arena", "exact"}) {
    CliRun r = Cli("plan " + in + " --strategy " + strategy + " --time-limit 0.000000001");
    EXPECT_EQ(r.code, 1) << strategy << ": " << r.out;
    EXPECT_NE(r.out.find("time limit"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("allow more with --time-limit"), std::string::npos) << r.out;
  }
  // With 'all' the limit covers the strategies together: those that find
  // nothing left of it are not run, and say so.
  for (const char* objects : {"", " --objects"}) {
    CliRun all = Cli("plan " + in + objects + " --strategy all --time-limit 0.000000001");
    EXPECT_NE(all.code, 0) << all.out;
    EXPECT_NE(all.out.find("greedy_by_size: not run: nothing was left of --time-limit 1e-09 s"),
              std::string::npos)
        << all.out;
  }
  // -t, as solve spells it too.
  CliRun short_flag = Cli("plan " + in + " --strategy best -t 0.000000001");
  EXPECT_EQ(short_flag.code, 1) << short_flag.out;
  EXPECT_NE(short_flag.out.find("allow more with --time-limit"), std::string::npos) << short_flag.out;
  CliRun ok = Cli("plan " + in + " --time-limit 60");
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("20000 buffers read in "), std::string::npos) << ok.out;
  CliRun json = Cli("plan " + in + " --json --strategy naive");
  ASSERT_EQ(json.code, 0) << json.out;
  EXPECT_TRUE(nlohmann::json::parse(json.out).contains("read_ms")) << json.out;
}

}  // namespace
}  // namespace tensormem
