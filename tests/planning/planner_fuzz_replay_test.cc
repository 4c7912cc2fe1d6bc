// The planner fuzzer's checks (fuzz/planner_fuzz_common.h) on fixed seeded
// inputs, with whatever compiler builds the tests: the fuzzer itself needs
// clang's libFuzzer. Random bytes are a problem of up to 64 buffers with
// every feature (alignments, fixed offsets, gaps, windows, sizes of every
// scale), planned by every strategy.
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../../fuzz/planner_fuzz_common.h"

namespace tensormem {
namespace {

TEST(PlannerFuzzReplay, SeededInputsPassTheFuzzChecks) {
  fuzz::on_check_failure = [](const char* what) { throw std::runtime_error(what); };
  std::mt19937_64 rng(20261127);
  int inputs = 0, planned = 0, buffers = 0;
  for (; inputs < 1500; ++inputs) {
    std::vector<std::uint8_t> bytes(8 + rng() % 700);
    for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(rng());
    try {
      const int n = fuzz::FuzzPlannerOne(bytes.data(), bytes.size());
      planned += n > 0;
      buffers += n;
    } catch (const std::runtime_error& e) {
      std::string hex;
      for (std::uint8_t b : bytes) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
      FAIL() << "input " << inputs << ": " << e.what() << "\n" << hex;
    }
  }
  // Most inputs reach the planners, with problems of every size.
  EXPECT_GT(planned, 1000);
  EXPECT_GT(buffers, 20 * planned);
}

}  // namespace
}  // namespace tensormem
