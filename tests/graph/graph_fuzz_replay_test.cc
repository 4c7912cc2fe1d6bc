// The graph fuzzer's checks (fuzz/graph_fuzz_common.h) on fixed seeded
// inputs, with whatever compiler builds the tests (the fuzzer itself needs
// clang's libFuzzer): random bytes are a graph, well formed or not, planned,
// validated, committed and executed, then re-planned after sizes changed.
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../../fuzz/graph_fuzz_common.h"

namespace tensormem {
namespace {

TEST(GraphFuzzReplay, SeededInputsPassTheFuzzChecks) {
  fuzz::on_check_failure = [](const char* what) { throw std::runtime_error(what); };
  std::mt19937_64 rng(20261127);
  int accepted = 0, nodes = 0;
  for (int input = 0; input < 3000; ++input) {
    std::vector<std::uint8_t> bytes(8 + rng() % 400);
    for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(rng());
    try {
      const int n = fuzz::FuzzGraphOne(bytes.data(), bytes.size());
      accepted += n > 0;
      nodes += n;
    } catch (const std::runtime_error& e) {
      std::string hex;
      for (std::uint8_t b : bytes) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
      FAIL() << "input " << input << ": " << e.what() << "\n" << hex;
    }
  }
  std::printf("%d of 3000 inputs accepted, %d nodes\n", accepted, nodes);
  // Most inputs are graphs that plan (one in eight takes every index from
  // the bytes and is mostly refused), with about 20 nodes each.
  EXPECT_GT(accepted, 1500);
  EXPECT_GT(nodes, 10 * accepted);
}

}  // namespace
}  // namespace tensormem
