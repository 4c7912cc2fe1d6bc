// SPDX-License-Identifier: Apache-2.0
// The planner fuzzer's checks (fuzz/planner_fuzz_common.h) on fixed seeded
// inputs, with whatever compiler builds the tests: the fuzzer itself needs
// clang's libFuzzer. Random bytes are a problem of up to 64 buffers with
// every feature (alignments, fixed offsets, gaps, windows, sizes of every
// scale), planned by every strategy.
#include <gtest/gtest.h>

#include "../../fuzz/planner_fuzz_common.h"
#include "fuzz_replay.h"

namespace tensormem {
namespace {

TEST(PlannerFuzzReplay, SeededInputsPassTheFuzzChecks) {
  long planned = 0;
  const long buffers = testing::ReplaySeededInputs(1500, 8, 708, [&](const std::uint8_t* data, std::size_t size) {
    const int n = fuzz::FuzzPlannerOne(data, size);
    planned += n > 0;
    return n;
  });
  // Most inputs reach the planners, with problems of every size.
  EXPECT_GT(planned, 1000);
  EXPECT_GT(buffers, 20 * planned);
}

}  // namespace
}  // namespace tensormem
