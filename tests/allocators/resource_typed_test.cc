// SPDX-License-Identifier: Apache-2.0
// The same suite over every allocator and adaptor (typed tests): exact
// statistics, coalescing, the limit, alignment, seeded random stress with a
// pattern in every block, multi-threaded stress, double frees and foreign
// pointers. Each Traits says how to build the resource (with a limit when
// asked) and how it accounts bytes.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "stress.h"

#include "tensormem/allocators/adaptors.h"
#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/allocators/buffer_pool.h"
#include "tensormem/allocators/system_allocator.h"
#include "tensormem/allocators/vmm_allocator.h"

namespace tensormem {
namespace {

// Owns a resource and whatever it is built on.
struct Built {
  std::vector<std::unique_ptr<PhysicalMemory>> physical;  // destroyed last
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<std::unique_ptr<MemoryResource>> layers;  // the last one is used
  MemoryResource& get() { return *layers.back(); }
};

struct SystemTraits {
  static constexpr bool kCoalesces = false;  // malloc's business
  static Built Make(std::optional<std::uint64_t> limit) {
    Built b;
    b.layers.push_back(std::make_unique<SystemAllocator>());
    if (limit) b.layers.push_back(std::make_unique<LimitingAdaptor>(*b.layers.back(), *limit));
    return b;
  }
  static std::uint64_t Accounted(std::uint64_t bytes) { return bytes; }
  static void Prime(MemoryResource&, std::uint64_t) {}
};

struct PoolTraits {
  static constexpr bool kCoalesces = true;  // children merge back into their parent
  static Built Make(std::optional<std::uint64_t> limit) {
    Built b;
    Backend* backend = &HostBackend();
    if (limit) {
      b.backends.push_back(std::make_unique<CappedBackend>(HostBackend(), *limit));
      backend = b.backends.back().get();
    }
    b.layers.push_back(std::make_unique<BufferPool>(*backend));
    return b;
  }
  // Fresh blocks come from the backend at their exact size.
  static std::uint64_t Accounted(std::uint64_t bytes) { return bytes; }
  // A pool only splits blocks it already has: give it one.
  static void Prime(MemoryResource& r, std::uint64_t bytes) {
    Result<void*> p = r.Allocate(bytes);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(r.Deallocate(*p).ok());
  }
};

struct BfcTraits {
  static constexpr bool kCoalesces = true;
  static Built Make(std::optional<std::uint64_t> limit) {
    Built b;
    BfcParams p;
    if (limit) p.memory_limit = *limit;
    b.layers.push_back(std::make_unique<BfcAllocator>(HostBackend(), p));
    return b;
  }
  static std::uint64_t Accounted(std::uint64_t bytes) { return BfcAllocator::RoundedBytes(bytes); }
  static void Prime(MemoryResource&, std::uint64_t) {}
};

struct CompactBfcTraits {
  static constexpr bool kCoalesces = true;
  static Built Make(std::optional<std::uint64_t> limit) {
    Built b;
    BfcParams p = CompactBfcParams();
    if (limit) p.memory_limit = *limit;
    b.backends.push_back(std::make_unique<VirtualMemoryBackend>(std::uint64_t{1} << 32));
    b.layers.push_back(std::make_unique<BfcAllocator>(*b.backends.back(), p));
    return b;
  }
  static std::uint64_t Accounted(std::uint64_t bytes) { return BfcAllocator::RoundedBytes(bytes); }
  static void Prime(MemoryResource&, std::uint64_t) {}
};

// Statistics over BFC: counts what callers asked for.
// vmm over host physical memory (2 MiB granules, memfd).
struct VmmTraits {
  static constexpr bool kCoalesces = true;
  static Built Make(std::optional<std::uint64_t> limit) {
    Built b;
    auto memory = HostPhysicalMemory::Create();
    EXPECT_TRUE(memory.ok()) << memory.status().ToString();
    b.physical.push_back(std::move(*memory));
    VmmParams p;
    if (limit) p.memory_limit = *limit;
    auto vmm = VmmAllocator::Create(*b.physical.back(), p);
    EXPECT_TRUE(vmm.ok()) << vmm.status().ToString();
    b.layers.push_back(std::move(*vmm));
    return b;
  }
  static std::uint64_t Accounted(std::uint64_t bytes) { return (bytes + 511) / 512 * 512; }
  static void Prime(MemoryResource&, std::uint64_t) {}
};

struct StatisticsOverBfcTraits {
  static constexpr bool kCoalesces = true;
  static Built Make(std::optional<std::uint64_t> limit) {
    Built b = BfcTraits::Make(limit);
    b.layers.push_back(std::make_unique<StatisticsAdaptor>(*b.layers.back()));
    return b;
  }
  static std::uint64_t Accounted(std::uint64_t bytes) { return bytes; }
  static void Prime(MemoryResource&, std::uint64_t) {}
};

template <typename T>
class EveryResource : public ::testing::Test {
 protected:
  void SetUp() override { built_ = T::Make(std::nullopt); }
  MemoryResource& r() { return built_.get(); }
  Built built_;
};

using Resources = ::testing::Types<SystemTraits, PoolTraits, BfcTraits, CompactBfcTraits, VmmTraits,
                                   StatisticsOverBfcTraits>;
class ResourceNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    if (std::is_same_v<T, SystemTraits>) return "system";
    if (std::is_same_v<T, PoolTraits>) return "pool";
    if (std::is_same_v<T, BfcTraits>) return "bfc";
    if (std::is_same_v<T, CompactBfcTraits>) return "bfc_compact";
    if (std::is_same_v<T, VmmTraits>) return "vmm";
    return "statistics_over_bfc";
  }
};
TYPED_TEST_SUITE(EveryResource, Resources, ResourceNames);

using stress::Block;
using stress::Fill;
using stress::Intact;

TYPED_TEST(EveryResource, ExactStatisticsAfterADeterministicSequence) {
  MemoryResource& r = this->r();
  const std::uint64_t sizes[] = {100, 1000, 5000};
  void* p[3];
  for (int i = 0; i < 3; ++i) {
    Result<void*> a = r.Allocate(sizes[i]);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    p[i] = *a;
  }
  ASSERT_TRUE(r.Deallocate(p[1]).ok());
  const AllocatorStats s = r.GetStats();
  EXPECT_EQ(s.num_allocs, 3u);
  EXPECT_EQ(s.num_frees, 1u);
  EXPECT_EQ(s.num_failed_allocs, 0u);
  EXPECT_EQ(s.bytes_in_use, TypeParam::Accounted(100) + TypeParam::Accounted(5000));
  EXPECT_EQ(s.peak_bytes_in_use,
            TypeParam::Accounted(100) + TypeParam::Accounted(1000) + TypeParam::Accounted(5000));
  EXPECT_EQ(s.largest_alloc_size, TypeParam::Accounted(5000));
  EXPECT_GE(s.bytes_reserved, s.bytes_in_use);
  EXPECT_GE(s.peak_bytes_reserved, s.bytes_reserved);
  EXPECT_GE(s.fragmentation, 0.0);
  EXPECT_LE(s.fragmentation, 1.0);
  ASSERT_TRUE(r.Deallocate(p[0]).ok());
  ASSERT_TRUE(r.Deallocate(p[2]).ok());
  EXPECT_EQ(r.GetStats().bytes_in_use, 0u);
  EXPECT_EQ(r.GetStats().num_frees, 3u);
}

TYPED_TEST(EveryResource, AFreedRunCoalescesSoTheNextAllocationReturnsTheFirstPointer) {
  if (!TypeParam::kCoalesces) GTEST_SKIP() << "this resource leaves coalescing to malloc";
  MemoryResource& r = this->r();
  constexpr int kBlocks = 8;
  constexpr std::uint64_t kSize = 4096;
  TypeParam::Prime(r, kBlocks * kSize);
  std::vector<void*> run;
  for (int i = 0; i < kBlocks; ++i) {
    Result<void*> a = r.Allocate(kSize);
    ASSERT_TRUE(a.ok());
    run.push_back(*a);
  }
  // Free in a scrambled order: the merge must not depend on it.
  for (int i : {3, 0, 7, 5, 1, 6, 2, 4}) ASSERT_TRUE(r.Deallocate(run[static_cast<std::size_t>(i)]).ok());
  Result<void*> whole = r.Allocate(kBlocks * kSize);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, run[0]);
  ASSERT_TRUE(r.Deallocate(*whole).ok());
}

TYPED_TEST(EveryResource, TheLimitIsEnforcedAndAFailureDoesNotPoisonLaterAllocations) {
  constexpr std::uint64_t kLimit = 4 << 20;
  Built built = TypeParam::Make(kLimit);
  MemoryResource& r = built.get();
  std::vector<void*> live;
  Status failure;
  for (int i = 0; i < 64 && failure.ok(); ++i) {
    Result<void*> a = r.Allocate(256 << 10);
    if (a.ok())
      live.push_back(*a);
    else
      failure = a.status();
  }
  ASSERT_FALSE(failure.ok()) << "no allocation failed under a limit of " << kLimit;
  EXPECT_EQ(failure.code(), StatusCode::kResourceExhausted) << failure.ToString();
  EXPECT_LE(live.size() * (256u << 10), kLimit);
  EXPECT_GE(live.size(), 4u);  // the limit was not refused early
  EXPECT_GE(r.GetStats().num_failed_allocs, 1u);
  // Still working: a freed block is reusable, the stats stay consistent.
  ASSERT_TRUE(r.Deallocate(live.back()).ok());
  live.pop_back();
  Result<void*> again = r.Allocate(256 << 10);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  live.push_back(*again);
  for (void* p : live) ASSERT_TRUE(r.Deallocate(p).ok());
  EXPECT_EQ(r.GetStats().bytes_in_use, 0u);
}

TYPED_TEST(EveryResource, AlignmentSweep) {
  MemoryResource& r = this->r();
  std::vector<std::pair<void*, std::uint64_t>> live;
  std::uint64_t seed = 0;
  for (std::uint64_t align = 32; align <= 4096; align *= 2) {
    for (std::uint64_t bytes : {std::uint64_t{1}, std::uint64_t{100}, std::uint64_t{4097}, align * 3}) {
      Result<void*> a = r.Allocate(bytes, align);
      ASSERT_TRUE(a.ok()) << "align " << align << ": " << a.status().ToString();
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(*a) % align, 0u) << "align " << align;
      Fill(*a, bytes, ++seed);
      live.emplace_back(*a, bytes);
    }
  }
  seed = 0;
  for (auto [p, bytes] : live) {
    EXPECT_TRUE(Intact(p, bytes, ++seed));
    ASSERT_TRUE(r.Deallocate(p).ok());
  }
  EXPECT_FALSE(r.Allocate(8, 3).ok());
  EXPECT_FALSE(r.Allocate(8, 0).ok());
  EXPECT_EQ(r.Allocate(8, 3).status().code(), StatusCode::kInvalidArgument);
}

// Mostly small, some large; alignments 8 to 512.
std::pair<std::uint64_t, std::uint64_t> MixedRequest(std::mt19937_64& rng) {
  const std::uint64_t kind = rng() % 100;
  const std::uint64_t bytes = kind < 80 ? 1 + rng() % 2048 : kind < 98 ? 1 + rng() % (64 << 10) : 1 + rng() % (1 << 20);
  return {bytes, std::uint64_t{8} << (rng() % 7)};
}

TYPED_TEST(EveryResource, SeededRandomStressKeepsEveryBlockIntact) {
  MemoryResource& r = this->r();
  for (std::uint64_t seed : {1, 2, 3}) {
    std::vector<Block> live;
    stress::Stress(r, seed, 3000, &live, MixedRequest);
    stress::FreeAll(r, &live);
  }
  const AllocatorStats s = r.GetStats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.num_allocs, s.num_frees);
}

TYPED_TEST(EveryResource, MultiThreadedStressWithCrossThreadFrees) {
  MemoryResource& r = this->r();
  constexpr int kThreads = 4;
  std::mutex handoff_mutex;
  std::deque<Block> handoff;  // blocks one thread allocates and another frees
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + static_cast<std::uint64_t>(t));
      std::vector<Block> live;
      for (int i = 0; i < 1500; ++i) {
        const std::uint64_t dice = rng() % 100;
        if (dice < 50 || live.empty()) {
          const std::uint64_t bytes = 1 + rng() % 8192;
          Result<void*> a = r.Allocate(bytes, 64);
          if (!a.ok()) {
            ++failures;
            continue;
          }
          const std::uint64_t s = rng();
          Fill(*a, bytes, s);
          live.push_back({*a, bytes, s});
        } else if (dice < 60) {
          std::lock_guard<std::mutex> lock(handoff_mutex);
          handoff.push_back(live.back());
          live.pop_back();
        } else if (dice < 70) {
          std::optional<Block> b;
          {
            std::lock_guard<std::mutex> lock(handoff_mutex);
            if (!handoff.empty()) {
              b = handoff.front();
              handoff.pop_front();
            }
          }
          if (b) {
            if (!Intact(b->p, b->bytes, b->seed) || !r.Deallocate(b->p).ok()) ++failures;
          }
        } else {
          const std::size_t k = rng() % live.size();
          const Block b = live[k];
          live[k] = live.back();
          live.pop_back();
          if (!Intact(b.p, b.bytes, b.seed) || !r.Deallocate(b.p).ok()) ++failures;
        }
      }
      for (const Block& b : live)
        if (!Intact(b.p, b.bytes, b.seed) || !r.Deallocate(b.p).ok()) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  for (const Block& b : handoff) {
    EXPECT_TRUE(Intact(b.p, b.bytes, b.seed));
    EXPECT_TRUE(r.Deallocate(b.p).ok());
  }
  EXPECT_EQ(failures.load(), 0);
  const AllocatorStats s = r.GetStats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.num_allocs, s.num_frees);
}

TYPED_TEST(EveryResource, DoubleFreeAndForeignPointersAreClearErrors) {
  MemoryResource& r = this->r();
  Result<void*> a = r.Allocate(1000);
  Result<void*> b = r.Allocate(1000);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(r.Deallocate(*a).ok());
  const AllocatorStats before = r.GetStats();

  Status twice = r.Deallocate(*a);
  EXPECT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find(PointerToString(*a)), std::string::npos) << twice.message();

  int on_stack = 0;
  Status foreign = r.Deallocate(&on_stack);
  EXPECT_FALSE(foreign.ok());
  EXPECT_NE(foreign.message().find("not"), std::string::npos) << foreign.message();
  void* from_malloc = std::malloc(64);
  EXPECT_FALSE(r.Deallocate(from_malloc).ok());
  std::free(from_malloc);
  Status interior = r.Deallocate(static_cast<char*>(*b) + 256);
  EXPECT_FALSE(interior.ok());

  // Nothing changed: the same statistics, and the allocator still works.
  const AllocatorStats after = r.GetStats();
  EXPECT_EQ(after.num_frees, before.num_frees);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  ASSERT_TRUE(r.Deallocate(*b).ok());
  Result<void*> c = r.Allocate(1000);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(r.Deallocate(*c).ok());
  EXPECT_TRUE(r.Deallocate(nullptr).ok());
}

TYPED_TEST(EveryResource, ZeroBytesGetDistinctPointers) {
  MemoryResource& r = this->r();
  Result<void*> a = r.Allocate(0);
  Result<void*> b = r.Allocate(0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(r.Deallocate(*a).ok());
  EXPECT_TRUE(r.Deallocate(*b).ok());
  EXPECT_EQ(r.Allocate(std::uint64_t{1} << 63).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace tensormem
