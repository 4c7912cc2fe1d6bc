// SPDX-License-Identifier: Apache-2.0
// mimalloc-stress style driving of a MemoryResource, shared by the typed
// tests over every allocator and by allocator-specific stress tests: random
// allocations and frees from a fixed seed, every block filled with its own
// pattern, checked when it is freed.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "tensormem/allocators/resource.h"

namespace tensormem::stress {

// Byte i of a block is (seed * 131 + i * 7) mod 256, a pattern of period
// 256: written and compared a period at a time (blocks of megabytes).
inline std::array<unsigned char, 256> Period(std::uint64_t seed) {
  std::array<unsigned char, 256> period{};
  for (std::size_t i = 0; i < period.size(); ++i) period[i] = static_cast<unsigned char>((seed * 131 + i * 7) & 0xff);
  return period;
}
inline void Fill(void* p, std::uint64_t bytes, std::uint64_t seed) {
  const std::array<unsigned char, 256> period = Period(seed);
  auto* b = static_cast<unsigned char*>(p);
  for (std::uint64_t i = 0; i < bytes; i += period.size())
    std::memcpy(b + i, period.data(), std::min<std::uint64_t>(period.size(), bytes - i));
}
inline bool Intact(const void* p, std::uint64_t bytes, std::uint64_t seed) {
  const std::array<unsigned char, 256> period = Period(seed);
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::uint64_t i = 0; i < bytes; i += period.size())
    if (std::memcmp(b + i, period.data(), std::min<std::uint64_t>(period.size(), bytes - i)) != 0) return false;
  return true;
}

struct Block {
  void* p;
  std::uint64_t bytes;
  std::uint64_t seed;
};

// `ops` random steps: an allocation (55 %, or whenever nothing is live) of
// the size and alignment `request(rng)` returns, else the free of a random
// live block after its pattern is checked. Live blocks stay in `live`.
template <typename Request>
void Stress(MemoryResource& r, std::uint64_t seed, int ops, std::vector<Block>* live, Request request) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < ops; ++i) {
    if (live->empty() || rng() % 100 < 55) {
      const auto [bytes, align] = request(rng);
      Result<void*> a = r.Allocate(bytes, align);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(*a) % align, 0u);
      const std::uint64_t s = rng();
      Fill(*a, bytes, s);
      live->push_back({*a, bytes, s});
    } else {
      const std::size_t k = rng() % live->size();
      const Block b = (*live)[k];
      (*live)[k] = live->back();
      live->pop_back();
      ASSERT_TRUE(Intact(b.p, b.bytes, b.seed)) << "block " << b.p << " was overwritten";
      ASSERT_TRUE(r.Deallocate(b.p).ok());
    }
  }
}

// Frees every live block after checking its pattern.
inline void FreeAll(MemoryResource& r, std::vector<Block>* live) {
  for (const Block& b : *live) {
    ASSERT_TRUE(Intact(b.p, b.bytes, b.seed)) << "block " << b.p << " was overwritten";
    ASSERT_TRUE(r.Deallocate(b.p).ok());
  }
  live->clear();
}

}  // namespace tensormem::stress
