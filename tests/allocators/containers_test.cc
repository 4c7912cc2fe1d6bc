// The allocators' internal containers against the standard ones: the
// pointer map against std::unordered_map over random inserts, overwrites,
// lookups and erases (a small key range, so probe runs collide and wrap
// around the table's end), node-arena sets against std::set, and the
// allocators' adaptive mutex (exclusion, and waking a sleeping waiter).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "allocators/adaptive_mutex.h"
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

TEST(AdaptiveMutex, ExcludesAndCountsEveryIncrement) {
  // More threads than this machine's cores, so that waiters also run out of
  // spins and sleep. The plain counters race (and TSan reports it) unless
  // the lock excludes; `inside` catches an overlap in any build.
  AdaptiveMutex mutex;
  bool inside = false;
  std::uint64_t count = 0, sum = 0;
  std::atomic<int> overlaps{0};
  constexpr int kThreads = 8, kIterations = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        std::lock_guard<AdaptiveMutex> lock(mutex);
        if (inside) ++overlaps;
        inside = true;
        ++count;
        sum += static_cast<std::uint64_t>(t);
        inside = false;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(count, std::uint64_t{kThreads} * kIterations);
  EXPECT_EQ(sum, std::uint64_t{kIterations} * (kThreads * (kThreads - 1) / 2));
}

TEST(AdaptiveMutex, WakesAWaiterThatWentToSleep) {
  // On the heap and shared: if the unlock fails to wake the waiter, the test
  // fails and leaves it asleep (detached) rather than hang in a join.
  struct Shared {
    AdaptiveMutex mutex;
    std::atomic<bool> acquired{false};
  };
  auto shared = std::make_shared<Shared>();
  shared->mutex.lock();
  EXPECT_FALSE(shared->mutex.try_lock());
  std::thread waiter([shared] {
    std::lock_guard<AdaptiveMutex> lock(shared->mutex);
    shared->acquired = true;
  });
  // The spin (1,000 looks, 10 of them yields) ends well within 200 ms: the
  // waiter has gone to sleep.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(shared->acquired.load());
  shared->mutex.unlock();  // must wake it
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!shared->acquired.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!shared->acquired.load()) {
    waiter.detach();
    FAIL() << "the unlock did not wake the sleeping waiter within 10 s";
  }
  waiter.join();
  EXPECT_TRUE(shared->mutex.try_lock());
  shared->mutex.unlock();
}

}  // namespace
}  // namespace tensormem::internal
