// SPDX-License-Identifier: Apache-2.0
// The buffer pool's own rules (MNN BufferAllocator): smallest fit, split
// and recursive merge, alignment adjustment, groups and barriers, the two
// release modes, and the defer mode planned by the static planner.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/buffer_pool.h"

namespace tensormem {
namespace {

void* Alloc(BufferPool& pool, std::uint64_t bytes, std::uint64_t alignment = 64) {
  Result<void*> p = pool.Allocate(bytes, alignment);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : nullptr;
}

TEST(BufferPool, NewBlocksComeFromTheBackendAtTheirSize) {
  BufferPool pool(HostBackend());
  void* a = Alloc(pool, 1000);
  void* b = Alloc(pool, 3000);
  EXPECT_EQ(pool.num_blocks(), 2u);
  AllocatorStats s = pool.GetStats();
  EXPECT_EQ(s.bytes_reserved, 4000u);
  EXPECT_EQ(s.bytes_in_use, 4000u);
  ASSERT_TRUE(pool.Deallocate(a).ok());
  ASSERT_TRUE(pool.Deallocate(b).ok());
  s = pool.GetStats();
  EXPECT_EQ(s.free_bytes, 4000u);
  EXPECT_EQ(s.largest_free_block, 3000u);
}

TEST(BufferPool, SmallestFitAndSplit) {
  BufferPool pool(HostBackend());
  void* a = Alloc(pool, 1000);
  void* b = Alloc(pool, 3000);
  void* c = Alloc(pool, 2000);
  for (void* p : {a, b, c}) ASSERT_TRUE(pool.Deallocate(p).ok());
  // 1500 -> the 2000 block (smallest >= 1500), split at 1536 (64-aligned).
  EXPECT_EQ(Alloc(pool, 1500), c);
  EXPECT_EQ(pool.num_blocks(), 3u);
  const AllocatorStats s = pool.GetStats();
  EXPECT_EQ(s.bytes_in_use, 1536u);
  EXPECT_EQ(s.free_bytes, 1000u + 3000u + 464u);
  // 400 -> the 464-byte rest of c.
  EXPECT_EQ(Alloc(pool, 400), static_cast<char*>(c) + 1536);
}

TEST(BufferPool, ChildrenMergeBackRecursively) {
  BufferPool pool(HostBackend());
  char* root = static_cast<char*>(Alloc(pool, 4096));
  ASSERT_TRUE(pool.Deallocate(root).ok());
  void* a = Alloc(pool, 1024);  // root -> [a][rest 3072]
  void* b = Alloc(pool, 1024);  // rest -> [b][rest 2048]
  void* c = Alloc(pool, 1024);  // rest -> [c][rest 1024]
  EXPECT_EQ(a, root);
  EXPECT_EQ(b, root + 1024);
  EXPECT_EQ(c, root + 2048);
  ASSERT_TRUE(pool.Deallocate(b).ok());
  ASSERT_TRUE(pool.Deallocate(a).ok());
  EXPECT_EQ(pool.GetStats().largest_free_block, 1024u);  // c still holds its parents
  ASSERT_TRUE(pool.Deallocate(c).ok());
  const AllocatorStats s = pool.GetStats();
  EXPECT_EQ(s.largest_free_block, 4096u);
  EXPECT_EQ(s.free_bytes, 4096u);
  EXPECT_DOUBLE_EQ(s.fragmentation, 0.0);
  EXPECT_EQ(Alloc(pool, 4096), root);
  EXPECT_EQ(pool.num_blocks(), 1u);
}

TEST(BufferPool, AlignmentAdjustmentMovesTheStartUp) {
  BufferPool pool(HostBackend());
  char* root = static_cast<char*>(Alloc(pool, 4096, 4096));
  ASSERT_TRUE(pool.Deallocate(root).ok());
  EXPECT_EQ(Alloc(pool, 64), root);  // the rest starts at root + 64
  void* aligned = Alloc(pool, 100, 256);
  EXPECT_EQ(aligned, root + 256);
  // The front part [64, 256 + 128) is what the node covers: 320 bytes.
  EXPECT_EQ(pool.GetStats().bytes_in_use, 64u + 320u);
  ASSERT_TRUE(pool.Deallocate(aligned).ok());
  ASSERT_TRUE(pool.Deallocate(root).ok());
  EXPECT_EQ(pool.GetStats().largest_free_block, 4096u);
}

TEST(BufferPool, GroupsKeepTheirFreedBlocksUntilTheBarrierEnds) {
  BufferPool pool(HostBackend());
  EXPECT_EQ(pool.BeginGroup().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(pool.BarrierBegin().ok());
  EXPECT_EQ(pool.BarrierBegin().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(pool.BeginGroup().ok());
  void* x = Alloc(pool, 4096);
  ASSERT_TRUE(pool.Deallocate(x).ok());  // into this thread's group list
  void* from_other = nullptr;
  std::thread other([&] {
    ASSERT_TRUE(pool.BeginGroup().ok());
    from_other = Alloc(pool, 4096);  // must not get x
    ASSERT_TRUE(pool.Deallocate(from_other).ok());
    ASSERT_TRUE(pool.EndGroup().ok());
  });
  other.join();
  EXPECT_NE(from_other, x);
  EXPECT_EQ(Alloc(pool, 4096), x);  // this group's own list
  ASSERT_TRUE(pool.Deallocate(x).ok());
  EXPECT_EQ(pool.Release(PoolRelease::kAll).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(pool.BarrierEnd().code(), StatusCode::kFailedPrecondition);  // a group is open
  ASSERT_TRUE(pool.EndGroup().ok());
  EXPECT_EQ(pool.EndGroup().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(pool.BarrierEnd().ok());
  EXPECT_EQ(pool.GetStats().free_bytes, 8192u);  // both blocks back in the main list
  void* y = Alloc(pool, 4096);
  EXPECT_TRUE(y == x || y == from_other);
  ASSERT_TRUE(pool.Deallocate(y).ok());
  // A second barrier reuses the first one's (emptied) group lists.
  ASSERT_TRUE(pool.BarrierBegin().ok());
  ASSERT_TRUE(pool.BeginGroup().ok());
  void* a = Alloc(pool, 4096);
  void* b = Alloc(pool, 4096);
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.num_blocks(), 2u);  // both from the main list
  ASSERT_TRUE(pool.Deallocate(a).ok());
  EXPECT_EQ(Alloc(pool, 4096), a);  // from the group's list
  ASSERT_TRUE(pool.Deallocate(a).ok());
  ASSERT_TRUE(pool.Deallocate(b).ok());
  ASSERT_TRUE(pool.EndGroup().ok());
  ASSERT_TRUE(pool.BarrierEnd().ok());
  EXPECT_EQ(pool.GetStats().free_bytes, 8192u);
}

TEST(BufferPool, ReleaseAllOrOnlyFree) {
  BufferPool pool(HostBackend());
  void* a = Alloc(pool, 1000);
  void* b = Alloc(pool, 2000);
  ASSERT_TRUE(pool.Deallocate(b).ok());
  Result<std::uint64_t> freed = pool.Release(PoolRelease::kOnlyFree);
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, 2000u);
  EXPECT_EQ(pool.num_blocks(), 1u);
  EXPECT_EQ(pool.GetStats().bytes_reserved, 1000u);
  EXPECT_EQ(pool.GetStats().peak_bytes_reserved, 3000u);
  freed = pool.Release(PoolRelease::kAll);  // a is gone too
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, 1000u);
  EXPECT_EQ(pool.num_blocks(), 0u);
  EXPECT_EQ(pool.GetStats().bytes_in_use, 0u);
  EXPECT_EQ(pool.Deallocate(a).code(), StatusCode::kNotFound);
}

// 20,000 splits of one block, each of the previous back half: a chain of
// split nodes that deep. Release(kAll) gives every node back (without
// recursion), the block merges whole again on frees, and the pool serves
// afterwards (ASan checks the nodes' reuse).
TEST(BufferPool, ADeeplySplitBlockReleasesAndMergesBack) {
  constexpr int kSplits = 20'000;
  BufferPool pool(HostBackend());
  for (int round = 0; round < 2; ++round) {
    void* block = Alloc(pool, std::uint64_t{kSplits + 1} * 64);
    ASSERT_TRUE(pool.Deallocate(block).ok());
    std::vector<void*> pieces;
    for (int i = 0; i < kSplits; ++i) pieces.push_back(Alloc(pool, 64));
    EXPECT_EQ(pool.num_blocks(), 1u);
    EXPECT_EQ(pieces.front(), block);
    EXPECT_EQ(static_cast<char*>(pieces.back()), static_cast<char*>(block) + (kSplits - 1) * 64);
    if (round == 0) {
      ASSERT_TRUE(pool.Release(PoolRelease::kAll).ok());
      EXPECT_EQ(pool.num_blocks(), 0u);
      EXPECT_EQ(pool.GetStats().free_bytes, 0u);
      continue;
    }
    // Frees in reverse order merge the chain back up, one level per free.
    for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) ASSERT_TRUE(pool.Deallocate(*it).ok());
    EXPECT_EQ(pool.GetStats().free_bytes, std::uint64_t{kSplits + 1} * 64);
    EXPECT_EQ(Alloc(pool, std::uint64_t{kSplits + 1} * 64), block);  // whole again
  }
}

TEST(BufferPool, SeparateBlocksNeverComeFromTheFreeList) {
  BufferPool pool(HostBackend());
  void* a = Alloc(pool, 4096);
  ASSERT_TRUE(pool.Deallocate(a).ok());
  Result<void*> s = pool.AllocateSeparate(1024);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(pool.num_blocks(), 2u);
  ASSERT_TRUE(pool.Deallocate(*s).ok());
}

TEST(BufferPool, DeferModePlansWithTheStaticPlanner) {
  BufferPool pool(HostBackend());
  // Events: 0 a+, 1 b+, 2 a-, 3 c+, 4 b-, 5 d+ (c and d never freed).
  DeferredChunk a = *pool.DeferAllocate(1000);
  DeferredChunk b = *pool.DeferAllocate(2000);
  ASSERT_TRUE(pool.DeferFree(a).ok());
  DeferredChunk c = *pool.DeferAllocate(1000);
  ASSERT_TRUE(pool.DeferFree(b).ok());
  DeferredChunk d = *pool.DeferAllocate(500);
  EXPECT_EQ(pool.Address(a).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(pool.DeferFree(a).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(pool.DeferFree(DeferredChunk{99}).code(), StatusCode::kNotFound);
  ASSERT_TRUE(pool.DeferCompute().ok());
  // Peak live bytes: a + b = b + c = 3000 (a and c never overlap in time);
  // at 64-byte alignment the lower one of a pair is padded: 1024 + 2000.
  EXPECT_EQ(pool.deferred_lower_bound(), 3024u);
  EXPECT_GE(pool.deferred_arena_bytes(), 3024u);
  EXPECT_LE(pool.deferred_arena_bytes(), 3000u + 3 * 64u);
  char* pa = static_cast<char*>(*pool.Address(a));
  char* pb = static_cast<char*>(*pool.Address(b));
  char* pc = static_cast<char*>(*pool.Address(c));
  char* pd = static_cast<char*>(*pool.Address(d));
  auto disjoint = [](char* x, std::uint64_t nx, char* y, std::uint64_t ny) { return x + nx <= y || y + ny <= x; };
  EXPECT_TRUE(disjoint(pa, 1000, pb, 2000));
  EXPECT_TRUE(disjoint(pc, 1000, pb, 2000));
  EXPECT_TRUE(disjoint(pc, 1000, pd, 500));
  for (char* p : {pa, pb, pc, pd}) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  std::memset(pb, 1, 2000);  // the arena is real host memory
  std::memset(pd, 2, 500);
  EXPECT_EQ(pool.GetStats().bytes_reserved, pool.deferred_arena_bytes());
  // Recording goes on; re-planning grows the arena when needed.
  DeferredChunk e = *pool.DeferAllocate(10000);
  EXPECT_EQ(pool.Address(e).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(pool.DeferCompute().ok());
  EXPECT_GE(pool.deferred_arena_bytes(), 10500u);
  ASSERT_TRUE(pool.Address(e).ok());
  ASSERT_TRUE(pool.DeferReset().ok());
  EXPECT_EQ(pool.Address(a).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(pool.GetStats().bytes_in_use, 0u);
}

// Found by the buffer pool fuzzer: the arena is the pool's; a free of its
// address (one the caller may once have had) is refused, not done.
TEST(BufferPool, TheDeferArenaIsNotTheCallersToFree) {
  BufferPool pool(HostBackend());
  DeferredChunk a = *pool.DeferAllocate(1000);
  ASSERT_TRUE(pool.DeferCompute().ok());
  void* at = *pool.Address(a);  // offset 0: the arena's address
  const Status st = pool.Deallocate(at);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("the defer mode's arena"), std::string::npos) << st.ToString();
  std::memset(at, 3, 1000);
  Result<void*> other = pool.Allocate(1000);  // not the arena's bytes
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(static_cast<char*>(*other) + 1000 <= at || static_cast<char*>(at) + 1000 <= *other);
  ASSERT_TRUE(pool.Deallocate(*other).ok());
  ASSERT_TRUE(pool.DeferReset().ok());
  EXPECT_EQ(pool.GetStats().bytes_in_use, 0u);
}

// Found by the buffer pool fuzzer: a re-plan whose chunks ask for a larger
// alignment than the arena's base has gets a new arena, though the old one
// is large enough.
TEST(BufferPool, AReplanThatNeedsALargerAlignmentTakesANewArena) {
  BufferPool pool(HostBackend());
  DeferredChunk big = *pool.DeferAllocate(8192);
  ASSERT_TRUE(pool.DeferFree(big).ok());
  ASSERT_TRUE(pool.DeferCompute().ok());
  const std::uint64_t aligned = std::uint64_t{1} << 20;
  DeferredChunk a = *pool.DeferAllocate(64, aligned);  // fits in the 8,192 bytes
  ASSERT_TRUE(pool.DeferCompute().ok());
  EXPECT_LE(pool.deferred_arena_bytes(), 8192u);
  Result<void*> at = pool.Address(a);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(*at) % aligned, 0u);
  ASSERT_TRUE(pool.DeferReset().ok());
}

// AllocateSeparate bypasses MemoryResource::Allocate, so it checks sizes
// itself: a size no memory can serve is refused before the backend is asked.
TEST(BufferPool, ASeparateBlockOfAnImpossibleSizeIsRefused) {
  CappedBackend backend(HostBackend(), std::uint64_t{1} << 20);
  BufferPool pool(backend);
  Result<void*> huge = pool.AllocateSeparate(~std::uint64_t{0});
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("more than 2^62"), std::string::npos) << huge.status().ToString();
  EXPECT_EQ(backend.num_refusals(), 0u);
  EXPECT_EQ(pool.AllocateSeparate(64, 3).status().code(), StatusCode::kInvalidArgument);
}

// The host backend knows its regions: giving back one it did not hand out,
// one twice, or with another size is an error naming the region, not a
// free() that aborts or corrupts the heap.
TEST(HostBackend, ReleasingWhatItDidNotHandOutIsAnError) {
  Backend& host = HostBackend();
  int local = 0;
  const Status foreign = host.Release(&local, sizeof local);
  EXPECT_EQ(foreign.code(), StatusCode::kNotFound);
  EXPECT_NE(foreign.message().find("is not a region it reserved"), std::string::npos) << foreign.ToString();
  Result<void*> r = host.Reserve(4096, 64);
  ASSERT_TRUE(r.ok());
  const Status wrong_size = host.Release(*r, 100);
  EXPECT_EQ(wrong_size.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_size.message().find("reserved with 4096 bytes, released with 100"), std::string::npos)
      << wrong_size.ToString();
  ASSERT_TRUE(host.Release(*r, 4096).ok());
  EXPECT_EQ(host.Release(*r, 4096).code(), StatusCode::kNotFound);  // twice
}

TEST(BufferPool, BackendRefusalIsAClearError) {
  CappedBackend small(HostBackend(), 1000);
  BufferPool pool(small);
  Result<void*> p = pool.Allocate(2000);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(p.status().message().find("pool: no free block of 2000 bytes"), std::string::npos)
      << p.status().message();
  EXPECT_EQ(pool.GetStats().num_failed_allocs, 1u);
}

}  // namespace
}  // namespace tensormem
