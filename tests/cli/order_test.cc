// SPDX-License-Identifier: Apache-2.0
// tensormem plan MODEL.onnx --order given|best|exact|joint: the order's
// line and JSON, never a higher peak than the given order (joint: never a
// larger arena with the same strategy), a bad name refused.
#include <algorithm>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "test_util.h"

namespace tensormem {
namespace {

testing::ShellRun Cli(const std::string& args) { return testing::RunShell(testing::CliPath() + " " + args); }

std::string Model() { return std::string(TENSORMEM_SHARED_DIR) + "/models/shufflenet_v2_x1_0.onnx"; }

TEST(CliOrder, PlansAnOnnxModelInTheChosenOrder) {
  if (testing::CliPath().empty()) GTEST_SKIP() << "the CLI was not built";
  testing::ShellRun given = Cli("plan " + Model() + " --json 2>/dev/null");
  if (given.code != 0 && given.out.find("without the ONNX") != std::string::npos)
    GTEST_SKIP() << "no ONNX importer";
  ASSERT_EQ(given.code, 0) << given.out;
  const auto g = nlohmann::json::parse(given.out);
  EXPECT_EQ(g["graph"]["order"]["method"], "given");
  EXPECT_TRUE(g["graph"]["order"]["lower_bound"].is_null()) << "the given order computes no bound";
  for (const char* order : {"best", "exact", "joint"}) {
    testing::ShellRun r = Cli("plan " + Model() + " --order " + order + " --json 2>/dev/null");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    const auto& o = j["graph"]["order"];
    EXPECT_EQ(o["given_peak"], g["graph"]["order"]["peak"]);
    EXPECT_LE(o["peak"].get<std::uint64_t>(), o["given_peak"].get<std::uint64_t>()) << order;
    EXPECT_LE(o["lower_bound"].get<std::uint64_t>(), o["peak"].get<std::uint64_t>()) << order;
    // The plan's lower bound is the chosen order's peak (aligned), never above the given one's.
    EXPECT_LE(j["lower_bound"].get<std::uint64_t>(), g["lower_bound"].get<std::uint64_t>()) << order;
  }
  testing::ShellRun text = Cli("plan " + Model() + " --order exact");
  EXPECT_NE(text.out.find("order: "), std::string::npos) << text.out;
  testing::ShellRun bad = Cli("plan " + Model() + " --order fastest");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("unknown order 'fastest' (known: given, best, exact, joint)"), std::string::npos) << bad.out;
}

TEST(CliOrder, JointReportsEveryCandidateAndKeepsTheSmallestArena) {
  if (testing::CliPath().empty()) GTEST_SKIP() << "the CLI was not built";
  for (const char* strategy : {"best", "arena"}) {
    const std::string s = std::string(" -s ") + strategy + " --json 2>/dev/null";
    testing::ShellRun given = Cli("plan " + Model() + s);
    if (given.code != 0 && given.out.find("without the ONNX") != std::string::npos)
      GTEST_SKIP() << "no ONNX importer";
    ASSERT_EQ(given.code, 0) << given.out;
    testing::ShellRun joint = Cli("plan " + Model() + " --order joint" + s);
    ASSERT_EQ(joint.code, 0) << joint.out;
    const auto g = nlohmann::json::parse(given.out);
    const auto j = nlohmann::json::parse(joint.out);
    const std::uint64_t total = j["results"][0]["total"];
    EXPECT_LE(total, g["results"][0]["total"].get<std::uint64_t>()) << strategy;
    const auto& candidates = j["graph"]["order"]["candidates"];
    ASSERT_GE(candidates.size(), 2u) << joint.out;
    EXPECT_EQ(candidates[0]["method"], "given");
    EXPECT_EQ(candidates[0]["arena"], g["results"][0]["total"]);
    std::uint64_t smallest = ~std::uint64_t{0};
    for (const auto& c : candidates) smallest = std::min(smallest, c["arena"].get<std::uint64_t>());
    EXPECT_EQ(total, smallest) << strategy;
    // The plan's figures are the chosen order's.
    for (const auto& c : candidates) {
      if (c["method"] == j["graph"]["order"]["method"]) {
        EXPECT_EQ(c["peak"], j["graph"]["order"]["peak"]);
      }
    }
  }
  testing::ShellRun text = Cli("plan " + Model() + " --order joint -s best");
  EXPECT_NE(text.out.find(" *"), std::string::npos) << text.out;  // the chosen order marked
}

}  // namespace
}  // namespace tensormem
