// SPDX-License-Identifier: Apache-2.0
// Overflow-checked and saturating unsigned arithmetic used across src/.
#pragma once

#include <cstdint>
#include <limits>
#include <numeric>

namespace tensormem::internal {

// 128-bit accumulator for sums of 64-bit sizes (a GCC/Clang extension).
__extension__ typedef unsigned __int128 Uint128;
// Signed 128-bit, for costs and keys that mix sizes with differences.
__extension__ typedef __int128 Int128;

inline constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

// Returns false on overflow.
inline bool CheckedAdd(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
inline bool CheckedMul(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
inline std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? kMaxU64 : r;
}
inline std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kMaxU64 : r;
}

// Smallest multiple of `alignment` (>= 1) that is >= value; false on overflow.
inline bool CheckedAlignUp(std::uint64_t value, std::uint64_t alignment, std::uint64_t* out) {
  const std::uint64_t rem = value % alignment;
  if (rem == 0) {
    *out = value;
    return true;
  }
  return CheckedAdd(value, alignment - rem, out);
}

// lcm(a, b) for a, b >= 1; false on overflow.
inline bool CheckedLcm(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return CheckedMul(a / std::gcd(a, b), b, out);
}

}  // namespace tensormem::internal
