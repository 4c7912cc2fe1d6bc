// SPDX-License-Identifier: Apache-2.0
// The allocators' internal containers against the standard ones: the
// pointer map against std::unordered_map over random inserts, overwrites,
// lookups and erases (a small key range, so probe runs collide and wrap
// around the table's end), node-arena sets against std::set, the pool's
// free list against the std::multimap it replaces (MNN's order), and the
// allocators' adaptive mutex (exclusion, and waking a sleeping waiter).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <map>
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
#include "allocators/pool_free_list.h"

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

struct ListNode {
  std::uint64_t size = 0;
  pool::FreeLinks<ListNode> free;
};
using SizeList = pool::SizeOrderedList<ListNode>;

TEST(SizeOrderedList, BinsAreMonotoneInTheSize) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = 0; s < 4096; ++s) sizes.push_back(s);
  for (int e = 12; e < 64; ++e)
    for (std::uint64_t d : {0, 1, 2, 3}) {
      const std::uint64_t p = std::uint64_t{1} << e;
      sizes.insert(sizes.end(), {p - d, p + d, p + (p >> 5) - d, p + (p >> 5) + d});
    }
  sizes.push_back(~std::uint64_t{0});
  std::sort(sizes.begin(), sizes.end());
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    ASSERT_LE(SizeList::BinOf(sizes[i - 1]), SizeList::BinOf(sizes[i])) << sizes[i - 1] << " " << sizes[i];
    ASSERT_LT(SizeList::BinOf(sizes[i]), SizeList::kBins) << sizes[i];
  }
  // Bins are narrow: a power of two and 1/32 above it differ.
  EXPECT_LT(SizeList::BinOf(std::uint64_t{1} << 40), SizeList::BinOf((std::uint64_t{1} << 40) + (std::uint64_t{1} << 35)));
}

class SizeOrderedListRandom : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(SizeOrderedListRandom, AgreesWithTheMultimapItReplaces) {
  // Sizes: a few distinct ones (many equal, the order of insertion then
  // decides), small ones, ones on both sides of bin edges, and any 64-bit.
  for (int kind = 0; kind < 4; ++kind) {
    std::mt19937_64 rng(GetParam() * 4 + static_cast<std::uint64_t>(kind));
    auto draw = [&]() -> std::uint64_t {
      switch (kind) {
        case 0: return 512 * (1 + rng() % 6);
        case 1: return rng() % 80;
        case 2: {
          const std::uint64_t p = std::uint64_t{1} << (5 + rng() % 50);
          const std::uint64_t edge = rng() % 2 ? p : p + (p >> 5);
          return edge - 3 + rng() % 7;
        }
        default: return rng() >> (rng() % 64);
      }
    };
    std::vector<std::unique_ptr<ListNode>> nodes;
    std::vector<ListNode*> present;
    SizeList list;
    std::multimap<std::uint64_t, ListNode*> ref;
    std::map<ListNode*, std::multimap<std::uint64_t, ListNode*>::iterator> where;
    for (int step = 0; step < 20000; ++step) {
      const std::uint64_t op = rng() % 8;
      if (op < 3 || present.empty()) {
        nodes.push_back(std::make_unique<ListNode>());
        ListNode* n = nodes.back().get();
        n->size = draw();
        list.Insert(n);
        ASSERT_EQ(n->free.list, &list);
        where[n] = ref.emplace(n->size, n);
        present.push_back(n);
      } else if (op < 6) {
        const std::size_t k = rng() % present.size();
        ListNode* n = present[k];
        list.Remove(n);
        ASSERT_EQ(n->free.list, nullptr);
        ref.erase(where[n]);
        where.erase(n);
        present[k] = present.back();
        present.pop_back();
      } else {
        const std::uint64_t q = rng() % 3 == 0 ? rng() >> (rng() % 64) : draw();
        auto it = ref.lower_bound(q);
        ListNode* got = list.LowerBound(q);
        ASSERT_EQ(got, it == ref.end() ? nullptr : it->second) << "step " << step << " query " << q;
        // The next few in order, as the pool's alignment walk takes them.
        for (int k = 0; k < 3 && got != nullptr; ++k) {
          got = list.Next(got);
          ++it;
          ASSERT_EQ(got, it == ref.end() ? nullptr : it->second) << "step " << step;
        }
      }
      ASSERT_EQ(list.empty(), ref.empty());
      ASSERT_EQ(list.Last(), ref.empty() ? nullptr : std::prev(ref.end())->second);
    }
    std::vector<ListNode*> walked, expected;
    for (ListNode* n = list.First(); n != nullptr; n = list.Next(n)) walked.push_back(n);
    for (const auto& [size, n] : ref) expected.push_back(n);
    EXPECT_EQ(walked, expected);
    list.Clear();
    EXPECT_TRUE(list.empty());
    EXPECT_EQ(list.First(), nullptr);
    EXPECT_EQ(list.LowerBound(0), nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SizeOrderedListRandom, ::testing::Values(1, 2, 3, 4));

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
