// SPDX-License-Identifier: Apache-2.0
// The BFC allocator's own rules, checked to the byte: rounding and bins,
// best fit in (size, address) order, TensorFlow's split rule and cap,
// coalescing, region growth (doubling, reserve-all, on-demand with
// coalesce_regions), the 90% retry, garbage collection of free regions,
// the out-of-memory report, the fragmentation metric, and the compact
// preset giving free granules back before it grows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/allocators/physical_memory.h"
#include "stress.h"

namespace tensormem {
namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * 1024;

void* Alloc(BfcAllocator& a, std::uint64_t bytes, std::uint64_t alignment = 64) {
  Result<void*> p = a.Allocate(bytes, alignment);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : nullptr;
}

TEST(Bfc, RoundingAndBins) {
  EXPECT_EQ(BfcAllocator::RoundedBytes(1), 256u);
  EXPECT_EQ(BfcAllocator::RoundedBytes(256), 256u);
  EXPECT_EQ(BfcAllocator::RoundedBytes(257), 512u);
  EXPECT_EQ(BfcAllocator::BinForSize(1), 0);
  EXPECT_EQ(BfcAllocator::BinForSize(256), 0);
  EXPECT_EQ(BfcAllocator::BinForSize(511), 0);
  EXPECT_EQ(BfcAllocator::BinForSize(512), 1);
  EXPECT_EQ(BfcAllocator::BinForSize(1 * MiB), 12);
  EXPECT_EQ(BfcAllocator::BinForSize(256 * MiB), 20);
  EXPECT_EQ(BfcAllocator::BinForSize(std::uint64_t{1} << 50), 20);  // the last bin is unbounded
  EXPECT_EQ(BfcAllocator::kNumBins, 21);
}

TEST(Bfc, DoublingGrowthAndTheSplitRuleToTheByte) {
  BfcAllocator a(HostBackend());
  // 1.5 MiB in the first 2 MiB region: not twice the request and the
  // leftover is under 128 MiB, so the whole chunk is used.
  void* p1 = Alloc(a, 1536 * KiB);
  AllocatorStats s = a.GetStats();
  EXPECT_EQ(s.bytes_reserved, 2 * MiB);
  EXPECT_EQ(s.bytes_in_use, 2 * MiB);
  EXPECT_EQ(s.free_bytes, 0u);
  // The next region doubles (4 MiB) and is split: 1.5 MiB used, 2.5 MiB free.
  void* p2 = Alloc(a, 1536 * KiB);
  s = a.GetStats();
  EXPECT_EQ(s.bytes_reserved, 6 * MiB);
  EXPECT_EQ(s.bytes_in_use, 3584 * KiB);
  EXPECT_EQ(s.free_bytes, 2560 * KiB);
  EXPECT_EQ(s.largest_free_block, 2560 * KiB);
  // 5 MiB fits nowhere: an 8 MiB region, used whole (8 < 2 * 5).
  void* p3 = Alloc(a, 5 * MiB);
  s = a.GetStats();
  EXPECT_EQ(s.bytes_reserved, 14 * MiB);
  EXPECT_EQ(s.peak_bytes_reserved, 14 * MiB);
  EXPECT_EQ(s.bytes_in_use, 3584 * KiB + 8 * MiB);
  EXPECT_EQ(s.largest_alloc_size, 8 * MiB);
  EXPECT_EQ(a.num_regions(), 3u);
  EXPECT_FALSE(s.bytes_limit.has_value());
  for (void* p : {p1, p2, p3}) ASSERT_TRUE(a.Deallocate(p).ok());
  s = a.GetStats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.free_bytes, 14 * MiB);
  EXPECT_EQ(s.largest_free_block, 8 * MiB);
  EXPECT_DOUBLE_EQ(s.fragmentation, 1.0 - 8.0 / 14.0);
}

TEST(Bfc, TheSplitCapSplitsChunksUnderTwiceTheRequest) {
  BfcParams p;
  p.initial_region_bytes = 8 * MiB;
  p.max_internal_fragmentation_bytes = 1 * MiB;
  BfcAllocator a(HostBackend(), p);
  void* x = Alloc(a, 5 * MiB);  // leftover 3 MiB >= the 1 MiB cap: split
  EXPECT_EQ(a.GetStats().bytes_in_use, 5 * MiB);
  EXPECT_EQ(a.GetStats().free_bytes, 3 * MiB);
  void* y = Alloc(a, 2560 * KiB);  // leftover 512 KiB < cap and 3 MiB < 2 * 2.5 MiB: whole
  EXPECT_EQ(a.GetStats().bytes_in_use, 8 * MiB);
  ASSERT_TRUE(a.Deallocate(x).ok());
  ASSERT_TRUE(a.Deallocate(y).ok());
}

TEST(Bfc, BestFitThenLowestAddress) {
  BfcAllocator a(HostBackend());
  // [x0 1K][x1 1K][x2 1K][x3 1K][x4 2K][x5 1K][x6 1K] then the free tail.
  std::vector<void*> x;
  for (std::uint64_t kb : {1, 1, 1, 1, 2, 1, 1}) x.push_back(Alloc(a, kb * KiB));
  for (std::size_t i = 1; i < x.size(); ++i) EXPECT_LT(x[i - 1], x[i]);  // one region, in order
  ASSERT_TRUE(a.Deallocate(x[1]).ok());
  ASSERT_TRUE(a.Deallocate(x[3]).ok());
  ASSERT_TRUE(a.Deallocate(x[4]).ok());  // coalesces with x3: a free 3K chunk
  // Free: x1 (1K), the 3K run, the tail. 1K: x1 is the best fit.
  EXPECT_EQ(Alloc(a, 1 * KiB), x[1]);
  // 2K: the 3K run is the smallest fit (the tail is larger); it is used
  // whole (3K < 2 * 2K).
  EXPECT_EQ(Alloc(a, 2 * KiB), x[3]);
  ASSERT_TRUE(a.Deallocate(x[2]).ok());
  ASSERT_TRUE(a.Deallocate(x[0]).ok());
  // Two free 1K chunks (x0, x2): the lowest address wins among equal sizes.
  EXPECT_EQ(Alloc(a, 1 * KiB), x[0]);
  EXPECT_EQ(Alloc(a, 1 * KiB), x[2]);
}

TEST(Bfc, FreeingCoalescesImmediately) {
  BfcAllocator a(HostBackend());
  void* p = Alloc(a, 1 * KiB);
  void* q = Alloc(a, 1 * KiB);
  void* r = Alloc(a, 1 * KiB);
  ASSERT_TRUE(a.Deallocate(p).ok());
  ASSERT_TRUE(a.Deallocate(r).ok());  // joins the tail
  AllocatorStats s = a.GetStats();
  EXPECT_EQ(s.free_bytes, 2 * MiB - 1 * KiB);
  EXPECT_EQ(s.largest_free_block, 2 * MiB - 2 * KiB);
  EXPECT_DOUBLE_EQ(s.fragmentation, 1.0 - double(2 * MiB - 2 * KiB) / double(2 * MiB - 1 * KiB));
  ASSERT_TRUE(a.Deallocate(q).ok());  // joins both neighbours: one chunk
  s = a.GetStats();
  EXPECT_EQ(s.largest_free_block, 2 * MiB);
  EXPECT_DOUBLE_EQ(s.fragmentation, 0.0);
  EXPECT_EQ(Alloc(a, 3 * KiB), p);
}

TEST(Bfc, ReserveAllTakesTheLimitUpFrontAndRetriesAtNinetyPercent) {
  CappedBackend device(HostBackend(), 3 * MiB);  // a "device" with 3 MiB
  BfcParams p;
  p.growth = BfcGrowth::kReserveAll;
  p.memory_limit = 4 * MiB;
  BfcAllocator a(device, p);
  void* x = Alloc(a, 1 * KiB);
  // 4 MiB refused, then 90% each time, rounded down to 256 bytes: 3.6 MiB
  // and 3.24 MiB refused, 2.916 MiB fits.
  std::uint64_t expect = 4 * MiB;
  for (int i = 0; i < 3; ++i) expect = (expect - expect / 10) / 256 * 256;
  EXPECT_EQ(a.GetStats().bytes_reserved, expect);
  EXPECT_EQ(expect, 3057408u);
  EXPECT_EQ(device.num_refusals(), 3u);
  EXPECT_EQ(a.GetStats().bytes_limit, 4 * MiB);
  ASSERT_TRUE(a.Deallocate(x).ok());

  BfcParams unlimited;
  unlimited.growth = BfcGrowth::kReserveAll;
  BfcAllocator b(HostBackend(), unlimited);
  EXPECT_EQ(b.Allocate(1).status().code(), StatusCode::kInvalidArgument);
}

// A small request the backend refuses gets an answer: the 90% retry used
// to round back up to the same size below 2,560 bytes and loop forever.
// And a refused huge request does not size the next regions after it.
TEST(Bfc, ASmallRequestTheBackendRefusesFailsAndAHugeOneLeavesNoTrace) {
  for (const BfcGrowth growth : {BfcGrowth::kDoubling, BfcGrowth::kOnDemand}) {
    SCOPED_TRACE(static_cast<int>(growth));
    CappedBackend device(HostBackend(), 1 * MiB);
    BfcParams p;
    p.growth = growth;
    p.initial_region_bytes = 1 * MiB;
    BfcAllocator a(device, p);
    const Result<void*> huge = a.Allocate(std::uint64_t{1} << 60);
    EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
    const std::uint64_t refusals = device.num_refusals();
    void* x = Alloc(a, 1 * MiB);  // the device's whole capacity, asked for at once
    EXPECT_EQ(device.num_refusals(), refusals);
    const Result<void*> small = a.Allocate(64);  // nothing left below
    EXPECT_EQ(small.status().code(), StatusCode::kResourceExhausted) << small.status().ToString();
    ASSERT_TRUE(a.Deallocate(x).ok());
  }
}

TEST(Bfc, GarbageCollectsWhollyFreeRegionsBeforeFailing) {
  BfcParams p;
  p.memory_limit = 6 * MiB;
  BfcAllocator a(HostBackend(), p);
  void* x = Alloc(a, 1536 * KiB);  // region 2 MiB
  void* y = Alloc(a, 3 * MiB);     // region 4 MiB
  EXPECT_EQ(a.num_regions(), 2u);
  ASSERT_TRUE(a.Deallocate(x).ok());
  ASSERT_TRUE(a.Deallocate(y).ok());
  // 5 MiB fits in neither free region and the limit leaves nothing: the two
  // regions go back and one 6 MiB region takes their place.
  void* z = Alloc(a, 5 * MiB);
  EXPECT_EQ(a.num_regions(), 1u);
  EXPECT_EQ(a.GetStats().bytes_reserved, 6 * MiB);
  EXPECT_EQ(a.GetStats().peak_bytes_reserved, 6 * MiB);
  ASSERT_TRUE(a.Deallocate(z).ok());

  BfcParams no_gc = p;
  no_gc.garbage_collection = false;
  BfcAllocator b(HostBackend(), no_gc);
  x = Alloc(b, 1536 * KiB);
  y = Alloc(b, 3 * MiB);
  ASSERT_TRUE(b.Deallocate(x).ok());
  ASSERT_TRUE(b.Deallocate(y).ok());
  EXPECT_EQ(b.Allocate(5 * MiB).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(b.ReleaseFreeRegions(), 6 * MiB);
  EXPECT_EQ(b.num_regions(), 0u);
}

TEST(Bfc, OutOfMemoryReportAndRecovery) {
  BfcParams p;
  p.memory_limit = 2 * MiB;
  BfcAllocator a(HostBackend(), p);
  void* x = Alloc(a, 1 * MiB + 1);
  Result<void*> fail = a.Allocate(1 * MiB);
  ASSERT_FALSE(fail.ok());
  EXPECT_EQ(fail.status().code(), StatusCode::kResourceExhausted);
  const std::string& m = fail.status().message();
  for (const char* want : {"out of memory allocating 1048576 bytes", "limit 2097152", "bins",
                           "bin 13 (>= 2.0 MiB): 1, 2097152, 1, 2097152, 1048577, 0", "chunk map", "largest free block", "used (requested 1048577)",
                           "free"})
    EXPECT_NE(m.find(want), std::string::npos) << "missing '" << want << "' in:\n" << m;
  EXPECT_EQ(a.GetStats().num_failed_allocs, 1u);
  ASSERT_TRUE(a.Deallocate(x).ok());
  void* y = Alloc(a, 1 * MiB);  // the failure left nothing behind
  ASSERT_NE(y, nullptr);
  std::ostringstream map;
  a.DumpChunkMap(map);
  EXPECT_NE(map.str().find("used (requested 1048576)"), std::string::npos) << map.str();
  ASSERT_TRUE(a.Deallocate(y).ok());
}

TEST(Bfc, LargeAlignmentsLeaveTheFrontPaddingFree) {
  BfcAllocator a(HostBackend());
  void* small = Alloc(a, 256);
  void* aligned = Alloc(a, 1000, 4096);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 4096, 0u);
  const AllocatorStats s = a.GetStats();
  EXPECT_EQ(s.bytes_in_use, 256u + 1024u);
  EXPECT_EQ(s.free_bytes, 2 * MiB - 256 - 1024);
  ASSERT_TRUE(a.Deallocate(aligned).ok());
  ASSERT_TRUE(a.Deallocate(small).ok());
  EXPECT_EQ(a.GetStats().largest_free_block, 2 * MiB);
}

// The virtual backend aligns addresses (its reservation is only
// page-aligned): every allocation alignment up to kMaxAllocationAlignment
// (2 MiB) works on a fresh compact BFC, and the backend alone.
TEST(Bfc, CompactOverVirtualMemoryTakesAlignmentsUpTo2MiB) {
  for (std::uint64_t align = 8 * KiB; align <= kMaxAllocationAlignment; align *= 2) {
    VirtualMemoryBackend vm;
    BfcAllocator a(vm, CompactBfcParams());
    void* small = Alloc(a, 100, 64);
    void* p = Alloc(a, 1000, align);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u) << align;
    ASSERT_TRUE(a.Deallocate(p).ok());
    ASSERT_TRUE(a.Deallocate(small).ok());

    VirtualMemoryBackend raw;
    Result<void*> one = raw.Reserve(100, 64);
    Result<void*> region = raw.Reserve(5000, align);
    ASSERT_TRUE(one.ok() && region.ok()) << region.status().ToString();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(*region) % align, 0u) << align;
    ASSERT_TRUE(raw.Release(*region, 5000).ok());
    ASSERT_TRUE(raw.Release(*one, 100).ok());
  }
  VirtualMemoryBackend vm;
  Result<void*> too_much = vm.Reserve(100, 2 * kMaxAllocationAlignment);
  ASSERT_FALSE(too_much.ok());
  EXPECT_EQ(too_much.status().message(),
            "virtual backend: alignment 4194304 is not a power of two between 1 and 2097152");
}

TEST(Bfc, CoalescedRegionsOverVirtualMemoryStayOneRegion) {
  VirtualMemoryBackend vm(std::uint64_t{1} << 32);
  BfcAllocator a(vm, CompactBfcParams());
  void* x = Alloc(a, 1 * MiB);
  void* y = Alloc(a, 1536 * KiB);  // the tail (1 MiB) is free: the extension adds 2 MiB
  void* z = Alloc(a, 3 * MiB);
  EXPECT_EQ(a.num_regions(), 1u);
  EXPECT_EQ(static_cast<char*>(y), static_cast<char*>(x) + 1 * MiB);
  EXPECT_EQ(static_cast<char*>(z), static_cast<char*>(y) + 1536 * KiB);
  // Reserved stays at the need rounded up to 2 MiB steps.
  EXPECT_EQ(a.GetStats().bytes_reserved, 6 * MiB);
  EXPECT_EQ(vm.reserved(), 6 * MiB);
  for (void* p : {y, x, z}) ASSERT_TRUE(a.Deallocate(p).ok());
  EXPECT_EQ(a.GetStats().largest_free_block, 6 * MiB);
  EXPECT_EQ(a.ReleaseFreeRegions(), 6 * MiB);  // one release over three backend regions
  EXPECT_EQ(vm.reserved(), 0u);
  EXPECT_EQ(Alloc(a, 1 * KiB), x);  // the address space is reused from the bottom
}

// Each block filled with its own byte; checked before it is freed.
void Fill(void* p, std::uint64_t bytes, unsigned char tag) { std::memset(p, tag, bytes); }
bool Holds(const void* p, std::uint64_t bytes, unsigned char tag) {
  const auto* c = static_cast<const unsigned char*>(p);
  return std::all_of(c, c + bytes, [tag](unsigned char b) { return b == tag; });
}

// release_free_granules: a request larger than every free chunk grows the
// allocator with the free chunks' whole granules given back first, and a
// block that lands on them later takes them again; no block loses a byte.
TEST(Bfc, CompactGivesFreeGranulesBackBeforeGrowing) {
  VirtualMemoryBackend vm(std::uint64_t{1} << 32);
  BfcAllocator a(vm, CompactBfcParams());
  struct Block {
    void* p;
    std::uint64_t bytes;
    unsigned char tag;
  };
  std::vector<Block> live;
  auto take = [&](std::uint64_t bytes, unsigned char tag) {
    void* p = Alloc(a, bytes);
    Fill(p, bytes, tag);
    live.push_back({p, bytes, tag});
    return p;
  };
  auto give = [&](void* p) {
    auto it = std::find_if(live.begin(), live.end(), [p](const Block& b) { return b.p == p; });
    ASSERT_TRUE(it != live.end());
    EXPECT_TRUE(Holds(it->p, it->bytes, it->tag)) << int(it->tag);
    ASSERT_TRUE(a.Deallocate(p).ok());
    live.erase(it);
  };
  void* hole1 = take(8 * MiB, 1);
  take(256 * KiB, 2);
  void* hole2 = take(8 * MiB, 3);
  take(256 * KiB, 4);
  give(hole1);
  give(hole2);
  EXPECT_EQ(vm.counters().decommits, 0u);  // freeing alone gives nothing back
  const std::uint64_t held_before = a.GetStats().bytes_reserved;
  take(12 * MiB, 5);  // larger than either 8 MiB hole: the allocator grows
  // Each hole holds at least three whole 2 MiB granules, given back.
  EXPECT_GE(vm.counters().decommits, 2u);
  EXPECT_LE(a.GetStats().bytes_reserved + 12 * MiB, vm.reserved());
  EXPECT_LT(a.GetStats().bytes_reserved, held_before + 12 * MiB);
  EXPECT_EQ(a.GetStats().peak_bytes_reserved, std::max(held_before, a.GetStats().bytes_reserved));
  // A block on a hole takes its granules again, and its bytes are its own.
  const std::uint64_t held_after = a.GetStats().bytes_reserved;
  take(8 * MiB, 6);
  EXPECT_GE(vm.counters().recommits, 1u);
  EXPECT_GT(a.GetStats().bytes_reserved, held_after);
  while (!live.empty()) give(live.back().p);
  EXPECT_EQ(a.GetStats().bytes_in_use, 0u);
}

// Once granules have been given back, a request goes to a chunk whose
// memory is still held rather than to the best-fitting chunk whose granules
// would have to be taken again (fit_candidates); with 1, best fit alone.
TEST(Bfc, CompactPrefersAChunkStillHeldToTakingGranulesAgain) {
  for (const std::uint32_t candidates : {8u, 1u}) {
    SCOPED_TRACE(candidates);
    VirtualMemoryBackend vm(std::uint64_t{1} << 32);
    BfcParams params = CompactBfcParams();
    params.fit_candidates = candidates;
    BfcAllocator a(vm, params);
    void* hole = Alloc(a, 10 * MiB);
    void* sep1 = Alloc(a, 256 * KiB);
    void* held = Alloc(a, 12 * MiB);
    void* sep2 = Alloc(a, 256 * KiB);
    ASSERT_TRUE(a.Deallocate(hole).ok());
    void* grown = Alloc(a, 16 * MiB);  // fits no hole: the 10 MiB hole's granules go back first
    ASSERT_GE(vm.counters().decommits, 1u);
    ASSERT_TRUE(a.Deallocate(held).ok());  // a 12 MiB hole whose memory is held
    const std::uint64_t recommits = vm.counters().recommits, decommits = vm.counters().decommits;
    const std::uint64_t reserved = a.GetStats().bytes_reserved;
    void* p = Alloc(a, 9 * MiB);  // fits both holes; the 10 MiB one fits best
    Fill(p, 9 * MiB, 7);
    if (candidates == 8) {  // no call to the backend, no memory more
      EXPECT_EQ(p, held);
      EXPECT_EQ(vm.counters().recommits, recommits);
      EXPECT_EQ(vm.counters().decommits, decommits);
      EXPECT_EQ(a.GetStats().bytes_reserved, reserved);
    } else {  // granules taken again, and (to stay within held_slack) the held hole's given back
      EXPECT_EQ(p, hole);
      EXPECT_GT(vm.counters().recommits, recommits);
      EXPECT_GT(vm.counters().decommits, decommits);
      EXPECT_GE(a.GetStats().bytes_reserved, reserved);
    }
    EXPECT_TRUE(Holds(p, 9 * MiB, 7));
    for (void* q : {p, sep1, sep2, grown}) ASSERT_TRUE(a.Deallocate(q).ok());
  }
  BfcParams bad = CompactBfcParams();
  for (const std::uint32_t n : {0u, 1025u}) {
    bad.fit_candidates = n;
    EXPECT_EQ(Validate(bad).code(), StatusCode::kInvalidArgument) << n;
    EXPECT_NE(Validate(bad).message().find("fit_candidates"), std::string::npos);
  }
}

// mimalloc-stress style at the granule's scale, where bfc_compact gives
// granules back and takes them again: random sizes (64 KiB to 6 MiB),
// random frees, every block filled with a pattern checked on free, with
// best fit alone and with fit_candidates, over host pages and over host
// granules with a handle each (as over a GPU's memory).
TEST(Bfc, CompactStressWithGranulesGivenBackKeepsEveryBlockIntact) {
  for (const int config : {0, 1, 2}) {
    const std::uint32_t candidates = config == 0 ? 1 : 8;
    SCOPED_TRACE(config);
    Result<std::unique_ptr<HostPhysicalMemory>> granules = HostPhysicalMemory::Create();
    ASSERT_TRUE(granules.ok()) << granules.status().ToString();
    std::unique_ptr<VirtualMemoryBackend> backend =
        config < 2 ? std::make_unique<VirtualMemoryBackend>(std::uint64_t{1} << 34)
                   : std::make_unique<VirtualMemoryBackend>(**granules, std::uint64_t{1} << 34, 0, true);
    VirtualMemoryBackend& vm = *backend;
    BfcParams params = CompactBfcParams();
    params.fit_candidates = candidates;
    BfcAllocator a(vm, params);
    // Granule-scale blocks at the default alignment (FindChunkPtr's path).
    const auto request = [](std::mt19937_64& rng) {
      return std::pair<std::uint64_t, std::uint64_t>{64 * KiB + rng() % (6 * MiB), 64};
    };
    std::vector<stress::Block> live;
    stress::Stress(a, 42, 1000, &live, request);
    EXPECT_GT(vm.counters().decommits, 0u);  // the path under test ran
    EXPECT_GT(vm.counters().recommits, 0u);
    stress::FreeAll(a, &live);
    const AllocatorStats s = a.GetStats();
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_EQ(s.num_allocs, s.num_frees);
    EXPECT_LE(s.bytes_reserved, s.peak_bytes_reserved);
    if (config == 2) {
      EXPECT_LE((*granules)->granules_held() * (*granules)->granularity(), vm.committed());
    }
  }
}

TEST(Bfc, ReleaseFreeGranulesNeedsABackendThatCanDecommit) {
  BfcAllocator a(HostBackend(), CompactBfcParams());  // the host backend cannot: ignored
  void* x = Alloc(a, 8 * MiB);
  void* y = Alloc(a, 64 * KiB);
  ASSERT_TRUE(a.Deallocate(x).ok());
  void* z = Alloc(a, 12 * MiB);
  EXPECT_EQ(a.GetStats().bytes_reserved, a.GetStats().peak_bytes_reserved);
  for (void* p : {y, z}) ASSERT_TRUE(a.Deallocate(p).ok());
  BfcParams bad = CompactBfcParams();
  bad.held_slack = -0.5;
  EXPECT_EQ(Validate(bad).code(), StatusCode::kInvalidArgument);
}

TEST(Bfc, TensorFlowDefaultsDoNotCoalesceRegions) {
  VirtualMemoryBackend vm(std::uint64_t{1} << 32);
  BfcAllocator a(vm);  // coalesce_regions off, as in TensorFlow
  void* x = Alloc(a, 1536 * KiB);
  void* y = Alloc(a, 1536 * KiB);
  EXPECT_EQ(a.num_regions(), 2u);
  ASSERT_TRUE(a.Deallocate(x).ok());
  ASSERT_TRUE(a.Deallocate(y).ok());
}

TEST(Bfc, AnAddressSpaceTheSystemRefusesIsNamedInTheOutOfMemoryError) {
  // 2^62 bytes, nor 1/1024 of it, fit no x86-64 or AArch64 address space.
  VirtualMemoryBackend vm(std::uint64_t{1} << 62);
  BfcAllocator a(vm, CompactBfcParams());
  Result<void*> p = a.Allocate(4096, 64);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(p.status().message().find("the backend refused: virtual backend: cannot reserve"),
            std::string::npos)
      << p.status().message();
}

}  // namespace
}  // namespace tensormem
