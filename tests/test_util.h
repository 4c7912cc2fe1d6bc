// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the tests: where ../shared is, skipping when it is not;
// running a command; a temporary folder per test; whether AddressSanitizer
// is on (TM_TEST_ASAN).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TM_TEST_ASAN 1
#endif
#endif

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace tensormem::testing {

// The shared data folder: $TENSORMEM_SHARED_DIR, else the configured path.
inline std::filesystem::path SharedDir() {
  if (const char* env = std::getenv("TENSORMEM_SHARED_DIR"); env && *env) return env;
  return TENSORMEM_SHARED_DIR;
}

inline bool HaveShared(const std::string& sub) {
  return std::filesystem::exists(SharedDir() / sub);
}

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string CliPath() { return TENSORMEM_CLI; }

// A shell command's exit code (-1: killed by a signal) and its stdout and
// stderr together.
struct ShellRun {
  int code = -1;
  std::string out;
};

inline ShellRun RunShell(const std::string& cmd) {
  ShellRun r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A fresh folder per test (tensormem_<suite>_<pid>_<test>), removed after it.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("tensormem_" + std::string(info->test_suite_name()) + "_" +
            std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Writes `text` to dir_/name (bytes as given); returns the path.
  std::string Write(const std::string& name, const std::string& text) {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::filesystem::path dir_;
};

}  // namespace tensormem::testing

// Skips the current test (with the reason) when ../shared/<sub> is absent.
#define TM_REQUIRE_SHARED(sub)                                                          \
  do {                                                                                  \
    if (!::tensormem::testing::HaveShared(sub))                                         \
      GTEST_SKIP() << "needs " << (::tensormem::testing::SharedDir() / (sub)).string()  \
                   << " (the shared data folder); set TENSORMEM_SHARED_DIR to run it";  \
  } while (0)
