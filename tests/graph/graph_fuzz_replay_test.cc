// SPDX-License-Identifier: Apache-2.0
// The graph fuzzer's checks (fuzz/graph_fuzz_common.h) on fixed seeded
// inputs, with whatever compiler builds the tests (the fuzzer itself needs
// clang's libFuzzer): random bytes are a graph, well formed or not, planned,
// validated, committed and executed, then re-planned after sizes changed.
#include <gtest/gtest.h>

#include "../../fuzz/graph_fuzz_common.h"
#include "fuzz_replay.h"

namespace tensormem {
namespace {

TEST(GraphFuzzReplay, SeededInputsPassTheFuzzChecks) {
  long accepted = 0;
  const long nodes = testing::ReplaySeededInputs(3000, 8, 408, [&](const std::uint8_t* data, std::size_t size) {
    const int n = fuzz::FuzzGraphOne(data, size);
    accepted += n > 0;
    return n;
  });
  // Most inputs are graphs that plan (one in eight takes every index from
  // the bytes and is mostly refused), with about 20 nodes each.
  EXPECT_GT(accepted, 1500);
  EXPECT_GT(nodes, 10 * accepted);
}

}  // namespace
}  // namespace tensormem
