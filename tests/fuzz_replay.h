// SPDX-License-Identifier: Apache-2.0
// Runs a fuzz target's body (fuzz/*_fuzz_common.h) on fixed seeded random
// inputs inside a test, with whatever compiler builds the tests: a failed
// fuzz check becomes a test failure naming the input and giving its bytes
// in hex (to keep as a seed, or to run under the fuzzer).
#pragma once

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../fuzz/reader_fuzz_common.h"

namespace tensormem::testing {

// `inputs` byte strings of min_bytes to max_bytes - 1 bytes from one seed;
// returns the sum of what `body(data, size)` returned.
template <typename Body>
long ReplaySeededInputs(int inputs, std::size_t min_bytes, std::size_t max_bytes, Body body) {
  fuzz::on_check_failure = [](const char* what) { throw std::runtime_error(what); };
  std::mt19937_64 rng(20261127);
  long total = 0;
  for (int input = 0; input < inputs; ++input) {
    std::vector<std::uint8_t> bytes(min_bytes + rng() % (max_bytes - min_bytes));
    for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(rng());
    try {
      total += body(bytes.data(), bytes.size());
    } catch (const std::runtime_error& e) {
      std::string hex;
      for (std::uint8_t b : bytes) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
      ADD_FAILURE() << "fuzz check failed on input " << input << ": " << e.what() << "\n" << hex;
    }
  }
  return total;
}

}  // namespace tensormem::testing
