// SPDX-License-Identifier: Apache-2.0
// The allocator fuzzer's checks (fuzz/allocator_fuzz_common.h) on fixed
// seeded inputs, with whatever compiler builds the tests: the fuzzer itself
// needs clang's libFuzzer, so without this its checks would only run in a
// fuzzing session. Each input picks an allocator and its parameters from its
// first bytes and drives it with the rest: half with random parameters
// (mostly refused), half with parameters spelled out to be valid, so that
// most reach the allocations, frees and bad frees.
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../../fuzz/allocator_fuzz_common.h"
#include "../../fuzz/buffer_pool_fuzz_common.h"
#include "../../fuzz/vmm_fuzz_common.h"
#include "fuzz_replay.h"

namespace tensormem {
namespace {

// FuzzBytes::Size's encoding of `v`: a length byte, then v big-endian.
void PutSize(std::vector<std::uint8_t>& out, std::uint64_t v) {
  out.push_back(7);  // 8 bytes, no shift
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// `variant` 1: kind 1's BFC over host granules with a handle per granule
// (giving granules back as over host pages) instead of host pages.
std::vector<std::uint8_t> ValidParameters(int kind, int variant) {
  constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
  std::vector<std::uint8_t> p{static_cast<std::uint8_t>(kind)};
  switch (kind) {
    case 0:
    case 1:
      PutSize(p, 128 * MiB);            // memory_limit
      p.push_back(kind == 0 ? 0 : 1);   // doubling, on demand
      PutSize(p, 2 * MiB);              // initial_region_bytes
      PutSize(p, 128 * MiB);            // max_internal_fragmentation_bytes
      // flags (kind 1: virtual memory, granules given back; variant 1 over
      // host granules, a handle each)
      p.push_back(kind == 0 ? 7 : variant == 0 ? 31 : 7 + 16 + 32 + 64);
      if (kind == 1) {
        p.push_back(3);   // held_slack 3/64
        p.push_back(8);   // fit_candidates
        if (variant == 1) p.push_back(9);  // 2^21-byte granules
        p.push_back(12);  // 2^32 bytes of addresses
        PutSize(p, 2 * MiB);  // commit step
      }
      break;
    case 2:
      PutSize(p, 64);  // split_granularity
      p.push_back(0);
      break;
    case 3:
      p.push_back(21);  // 2 MiB granules
      PutSize(p, 128 * MiB);
      PutSize(p, MiB);
      PutSize(p, 512);
      PutSize(p, std::uint64_t{1} << 36);
      p.push_back(1);
      p.push_back(0);
      PutSize(p, 16);
      break;
    case 4:
      p.push_back(1);  // track pointers
      PutSize(p, 128 * MiB);
      break;
    default:
      break;
  }
  return p;
}

TEST(AllocatorFuzzReplay, SeededInputsPassTheFuzzChecks) {
  fuzz::on_check_failure = [](const char* what) { throw std::runtime_error(what); };
  std::mt19937_64 rng(20261127);
  int inputs = 0;
  for (int kind = 0; kind < 6; ++kind) {
    int allocations = 0;
    for (int i = 0; i < 150; ++i, ++inputs) {
      std::vector<std::uint8_t> bytes = i % 2 == 0 ? ValidParameters(kind, i / 2 % 2) : std::vector<std::uint8_t>{};
      const std::size_t n = 16 + rng() % 600;
      for (std::size_t k = 0; k < n; ++k) bytes.push_back(static_cast<std::uint8_t>(rng()));
      bytes[0] = static_cast<std::uint8_t>(kind);  // every allocator, the same count of inputs
      try {
        allocations += fuzz::FuzzAllocatorOne(bytes.data(), bytes.size());
      } catch (const std::runtime_error& e) {
        ADD_FAILURE() << "fuzz check failed: " << e.what() << " on input " << inputs << " (allocator " << kind << ")";
      }
    }
    EXPECT_GT(allocations, 1000) << "allocator " << kind << ": the inputs should reach the operations";
  }
  EXPECT_EQ(inputs, 900);
}

// The buffer pool fuzzer's body: the pool's own calls (groups, barriers,
// releases, the defer mode) in the order random bytes give.
TEST(BufferPoolFuzzReplay, SeededInputsPassTheFuzzChecks) {
  const long steps = testing::ReplaySeededInputs(600, 16, 916, fuzz::FuzzBufferPoolOne);
  EXPECT_GT(steps, 600 * 50) << "the inputs should reach the pool's calls";
}

// The vmm fuzzer's body: three streams, record_stream, a device that
// finishes a stream's work only when told, empty_cache and limits.
TEST(VmmFuzzReplay, SeededInputsPassTheFuzzChecks) {
  const long allocations = testing::ReplaySeededInputs(400, 16, 1216, fuzz::FuzzVmmOne);
  EXPECT_GT(allocations, 400 * 20) << "the inputs should reach the allocations";
}

}  // namespace
}  // namespace tensormem
