// SPDX-License-Identifier: Apache-2.0
#ifndef TENSORMEM_SOLVER_SHUFFLE_H_
#define TENSORMEM_SOLVER_SHUFFLE_H_

// Fisher-Yates over a splitmix64 stream: the same seed gives the same order
// with every compiler and standard library (std::shuffle's algorithm is the
// library's own, so libstdc++ and libc++ shuffle differently from one seed).

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace tensormem::solver {

template <typename T>
void ShuffleFromSeed(std::span<T> values, std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::size_t i = values.size(); i > 1; --i) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::swap(values[i - 1], values[static_cast<std::size_t>(z % i)]);
  }
}

}  // namespace tensormem::solver

#endif  // TENSORMEM_SOLVER_SHUFFLE_H_
