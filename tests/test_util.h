// Helpers shared by the tests: where ../shared is, skipping when it is not.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace tensormem::testing

// Skips the current test (with the reason) when ../shared/<sub> is absent.
#define TM_REQUIRE_SHARED(sub)                                                          \
  do {                                                                                  \
    if (!::tensormem::testing::HaveShared(sub))                                         \
      GTEST_SKIP() << "needs " << (::tensormem::testing::SharedDir() / (sub)).string()  \
                   << " (the shared data folder); set TENSORMEM_SHARED_DIR to run it";  \
  } while (0)
