// SPDX-License-Identifier: Apache-2.0
// tensormem plan MODEL.onnx --order given|best|exact: the order's line and
// JSON, never a higher peak than the given order, a bad name refused.
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
  for (const char* order : {"best", "exact"}) {
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
  EXPECT_NE(bad.out.find("unknown order 'fastest' (known: given, best, exact)"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace tensormem
