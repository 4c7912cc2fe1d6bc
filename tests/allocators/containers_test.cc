// The allocators' internal containers against the standard ones: the
// pointer map against std::unordered_map over random inserts, overwrites,
// lookups and erases (a small key range, so probe runs collide and wrap
// around the table's end), and node-arena sets against std::set.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <unordered_map>

#include "allocators/node_arena.h"
#include "allocators/pointer_map.h"

namespace tensormem::internal {
namespace {

const void* Key(std::uint64_t k) { return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(k)); }

class PointerMapRandom : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(PointerMapRandom, AgreesWithUnorderedMap) {
  // Keys in [1, range] x the stride: the stride is the allocators' block
  // alignment (the low bits the hash drops) or 1 (keys that differ only
  // there, the worst case for the hash).
  for (const std::uint64_t stride : {std::uint64_t{1}, std::uint64_t{64}, std::uint64_t{512}}) {
    std::mt19937_64 rng(GetParam());
    const std::uint64_t range = 16 + rng() % 2000;
    PointerMap<std::uint64_t> map;
    std::unordered_map<const void*, std::uint64_t> ref;
    for (int step = 0; step < 40000; ++step) {
      const void* k = Key((1 + rng() % range) * stride);
      switch (rng() % 4) {
        case 0:
        case 1: {
          const std::uint64_t v = rng();
          map.Insert(k, v);
          ref[k] = v;
          break;
        }
        case 2:
          ASSERT_EQ(map.Erase(k), ref.erase(k) == 1) << "step " << step;
          break;
        default: {
          const std::uint64_t* got = map.Find(k);
          auto it = ref.find(k);
          ASSERT_EQ(got != nullptr, it != ref.end()) << "step " << step;
          if (got != nullptr) {
            ASSERT_EQ(*got, it->second);
          }
        }
      }
      ASSERT_EQ(map.size(), ref.size());
    }
    // Every key left is found, every other one is not; then all erase.
    for (std::uint64_t i = 1; i <= range; ++i) {
      const void* k = Key(i * stride);
      const std::uint64_t* got = map.Find(k);
      ASSERT_EQ(got != nullptr, ref.count(k) == 1);
      if (got != nullptr) {
        ASSERT_EQ(*got, ref[k]);
      }
    }
    for (const auto& [k, v] : ref) ASSERT_TRUE(map.Erase(k));
    EXPECT_TRUE(map.empty());
    EXPECT_EQ(map.Find(Key(stride)), nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, PointerMapRandom, ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8));

TEST(PointerMap, NullAndAbsentKeys) {
  PointerMap<int> map;
  EXPECT_EQ(map.Find(nullptr), nullptr);
  EXPECT_FALSE(map.Erase(nullptr));
  EXPECT_FALSE(map.Erase(Key(64)));
  map.Insert(Key(64), 1);
  map.Insert(Key(64), 2);  // an overwrite, not a second entry
  EXPECT_EQ(map.size(), 1u);
  EXPECT_EQ(*map.Find(Key(64)), 2);
  EXPECT_EQ(map.Find(nullptr), nullptr);
  for (std::uint64_t k = 1; k <= 100; ++k) map.Insert(Key(k * 64), static_cast<int>(k));
  map.clear();  // the pool's Release(kAll)
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.Find(Key(64)), nullptr);
  map.Insert(Key(128), 7);
  EXPECT_EQ(*map.Find(Key(128)), 7);
  EXPECT_EQ(map.size(), 1u);
}

TEST(NodeArena, SetsAgreeWithStdSetAndReuseNodes) {
  NodeArena arena;
  using ArenaSet = std::set<std::uint64_t, std::less<>, NodeAllocator<std::uint64_t>>;
  ArenaSet a{std::less<>{}, NodeAllocator<std::uint64_t>(&arena)};
  ArenaSet b{std::less<>{}, NodeAllocator<std::uint64_t>(&arena)};  // two sets, one arena
  std::set<std::uint64_t> ref_a, ref_b;
  std::mt19937_64 rng(7);
  for (int step = 0; step < 50000; ++step) {
    const std::uint64_t v = rng() % 3000;
    ArenaSet& s = step % 2 ? a : b;
    std::set<std::uint64_t>& ref = step % 2 ? ref_a : ref_b;
    if (rng() % 3 == 0) {
      ASSERT_EQ(s.erase(v), ref.erase(v));
    } else {
      ASSERT_EQ(s.insert(v).second, ref.insert(v).second);
    }
  }
  EXPECT_TRUE(std::equal(a.begin(), a.end(), ref_a.begin(), ref_a.end()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), ref_b.begin(), ref_b.end()));
}

}  // namespace
}  // namespace tensormem::internal
