// SPDX-License-Identifier: Apache-2.0
// The CLI on an ONNX model: plan (table and JSON), records, and errors.
#include <cstdio>
#include <filesystem>
#include <unistd.h>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "test_util.h"

namespace tensormem {
namespace {

struct Ran {
  int code;
  std::string out;
};

Ran RunCli(const std::string& args) {
  const std::string cmd = testing::CliPath() + " " + args + " 2>&1";
  Ran r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const std::string kModel = std::string(TENSORMEM_SOURCE_DIR) + "/examples/resnet18.onnx";

TEST(OnnxCli, PlanPrintsBothArenasAndTheSaving) {
  if (testing::CliPath().empty()) GTEST_SKIP() << "the CLI was not built";
  Ran r = RunCli("plan " + kModel + " --strategy all");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("65 buffers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("arena "), std::string::npos);
  EXPECT_NE(r.out.find("persistent arena (constants, variables): 46,723,488 bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("saving"), std::string::npos);
  r = RunCli("plan " + kModel + " --json --strategy greedy_by_size");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["graph"]["persistent_bytes"], 46723488);
  EXPECT_EQ(j["alignment"], 64);
  EXPECT_EQ(j["results"][0]["total"], j["lower_bound"]);
}

TEST(OnnxCli, PlanWritesCsvAndSvgWithTensorNames) {
  if (testing::CliPath().empty()) GTEST_SKIP() << "the CLI was not built";
  const std::string dir = ::testing::TempDir();
  Ran r = RunCli("plan " + kModel + " --out " + dir + "/plan.csv --svg " + dir + "/map.svg --align 128");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string csv = testing::ReadFile(dir + "/plan.csv");
  EXPECT_EQ(csv.rfind("id,lower,upper,size,alignment,offset\n", 0), 0u) << csv.substr(0, 80);
  EXPECT_NE(csv.find("/layer1/layer1.0/conv1/Conv_output_0,"), std::string::npos);
  EXPECT_NE(csv.find(",128,"), std::string::npos);
  EXPECT_NE(testing::ReadFile(dir + "/map.svg").find("<svg"), std::string::npos);
}

TEST(OnnxCli, RecordsAreMiniMallocCsv) {
  if (testing::CliPath().empty()) GTEST_SKIP() << "the CLI was not built";
  const std::string out = ::testing::TempDir() + "/records.csv";
  Ran r = RunCli("records " + kModel + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string csv = testing::ReadFile(out);
  EXPECT_EQ(csv.rfind("id,lower,upper,size,alignment\ninput,0,65,602112,64\n", 0), 0u) << csv.substr(0, 120);
  // The records plan like any problem file.
  r = RunCli("plan " + out + " --strategy greedy_by_size");
  EXPECT_EQ(r.code, 0) << r.out;
  r = RunCli("records " + kModel + " --preserve-all-tensors");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("\n/Flatten_output_0,63,65,2048,64\n"), std::string::npos) << r.out;  // kept to the end
}

TEST(OnnxCli, BadInputGetsExitCode2) {
  if (testing::CliPath().empty()) GTEST_SKIP() << "the CLI was not built";
  const std::string junk = ::testing::TempDir() + "/junk.onnx";
  FILE* f = std::fopen(junk.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("this is not a model\n", f);
  std::fclose(f);
  Ran r = RunCli("plan " + junk);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("not an ONNX model"), std::string::npos) << r.out;
  r = RunCli("plan " + kModel + " --dim batch=1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no dimension named 'batch'"), std::string::npos) << r.out;
  r = RunCli("plan " + kModel + " --input-shape input=1x3x64xz");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("not a non-negative integer"), std::string::npos) << r.out;
  r = RunCli("plan " + kModel + " --input-shape input=1x3x112x112");
  EXPECT_EQ(r.code, 0) << r.out;
  r = RunCli("plan " + kModel + " --objects");
  EXPECT_EQ(r.code, 2);
  r = RunCli("records " + std::string(TENSORMEM_SOURCE_DIR) + "/examples/five_buffers.csv");
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace tensormem

namespace tensormem {
namespace {

// Issue 12 items 6, 7: records to a full disk is an error; an ONNX model
// is never overwritten by its own plan or records.
TEST(OnnxCliHardening, LostOutputAndOverwritingTheModelAreErrors) {
  if (testing::CliPath().empty()) GTEST_SKIP() << "the CLI was not built";
  if (std::filesystem::exists("/dev/full")) {
    Ran r = RunCli("records " + kModel + " > /dev/full");
    EXPECT_EQ(r.code, 1) << r.out;
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("tensormem_onnx_hardening_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path copy = dir / "model.onnx";
  std::filesystem::copy_file(kModel, copy);
  const auto size = std::filesystem::file_size(copy);
  for (const std::string& args : {std::string("plan ") + copy.string() + " --out " + copy.string(),
                                  std::string("plan ") + copy.string() + " --svg " + copy.string(),
                                  std::string("records ") + copy.string() + " --out " + copy.string(),
                                  std::string("solve ") + copy.string() + " --out " + copy.string()}) {
    Ran r = RunCli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(std::filesystem::file_size(copy), size) << args;
  }
  std::filesystem::remove_all(dir);
  // solve reads a model as plan does: its scratch arena.
  Ran planned = RunCli("plan " + kModel + " -s naive");
  Ran r = RunCli("solve " + kModel + " --time-limit 1");
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string buffers = r.out.substr(0, r.out.find(" buffers"));
  EXPECT_NE(planned.out.find(buffers.substr(buffers.rfind(' ') + 1) + " buffers"), std::string::npos)
      << r.out << planned.out;
}

}  // namespace
}  // namespace tensormem
