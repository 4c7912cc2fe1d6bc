// SPDX-License-Identifier: Apache-2.0
// The vmm allocator and the physical memory below it, on the host (memfd
// granules): the page cache (a repeat costs no map call), re-stitching under
// a limit, out-of-memory reports that leak nothing, stream ordering with
// events, release, parameter validation, and the VirtualMemoryBackend over
// granules. The same run on a GPU where one is present (skipped elsewhere).
#include <sys/mman.h>
#include <sys/resource.h>
#include <zlib.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/allocators/physical_memory.h"
#include "tensormem/trace.h"
#include "tensormem/allocators/vmm_allocator.h"
#include "tensormem/io.h"

namespace tensormem {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

std::unique_ptr<HostPhysicalMemory> Host(HostPhysicalMemoryParams params = {}) {
  auto m = HostPhysicalMemory::Create(params);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(*m);
}

// A host device whose events complete only when waited for, synchronised
// or completed by the test (CompleteEvents): stream order made visible.
std::unique_ptr<HostPhysicalMemory> ManualEventsHost() {
  HostPhysicalMemoryParams hp;
  hp.manual_events = true;
  return Host(hp);
}

std::unique_ptr<VmmAllocator> Vmm(PhysicalMemory& memory, VmmParams params = {}) {
  auto v = VmmAllocator::Create(memory, params);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return std::move(*v);
}

void Fill(void* p, std::uint64_t bytes, std::uint8_t seed) {
  auto* b = static_cast<std::uint8_t*>(p);
  for (std::uint64_t i = 0; i < bytes; i += 61) b[i] = static_cast<std::uint8_t>(seed + i);
  b[bytes - 1] = seed;
}
bool Intact(const void* p, std::uint64_t bytes, std::uint8_t seed) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  for (std::uint64_t i = 0; i + 1 < bytes; i += 61)
    if (b[i] != static_cast<std::uint8_t>(seed + i)) return false;
  return b[bytes - 1] == seed;
}

TEST(HostPhysicalMemory, ValidatesItsParams) {
  for (std::uint64_t g : {std::uint64_t{0}, std::uint64_t{3000}, std::uint64_t{1024}, std::uint64_t{3} << 20,
                          std::uint64_t{2} << 30}) {
    HostPhysicalMemoryParams p;
    p.granularity = g;
    EXPECT_EQ(HostPhysicalMemory::Create(p).status().code(), StatusCode::kInvalidArgument) << g;
  }
  HostPhysicalMemoryParams both;
  both.manual_events = true;
  both.event_lag = 5;
  const Status st = HostPhysicalMemory::Create(both).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("exclude each other"), std::string::npos) << st.message();
}

// A device `event_lag` steps behind: an event completes that many
// AdvanceDevice calls after it was recorded, at once when waited for.
TEST(HostPhysicalMemory, ALaggingDeviceCompletesEventsLater) {
  HostPhysicalMemoryParams hp;
  hp.event_lag = 3;
  auto m = Host(hp);
  Result<EventHandle> e = m->RecordEvent(0);
  ASSERT_TRUE(e.ok());
  ASSERT_NE(*e, 0u);
  for (int i = 0; i < 2; ++i) {
    m->AdvanceDevice();
    EXPECT_FALSE(m->EventCompleted(*e)) << i;
  }
  m->AdvanceDevice();
  EXPECT_TRUE(m->EventCompleted(*e));
  Result<EventHandle> later = m->RecordEvent(0);
  Result<EventHandle> last = m->RecordEvent(0);
  ASSERT_TRUE(later.ok() && last.ok());
  ASSERT_TRUE(m->WaitForEvent(*later).ok());
  EXPECT_TRUE(m->EventCompleted(*later));
  EXPECT_FALSE(m->EventCompleted(*last));  // recorded after the one waited for
  ASSERT_TRUE(m->Synchronize().ok());
  EXPECT_TRUE(m->EventCompleted(*last));
  const Status never = m->WaitForEvent(*last + 100);
  EXPECT_EQ(never.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(never.message().find("never recorded"), std::string::npos) << never.message();
  EXPECT_EQ(m->call_counts().event_waits, 2u);
}

// Manual events (tests' streams) complete only when told, waited for, or
// when the host synchronises with the device, as a lagging device's do.
TEST(HostPhysicalMemory, ManualEventsCompleteWhenWaitedForOrSynchronised) {
  auto m = ManualEventsHost();
  Result<EventHandle> first = m->RecordEvent(0);
  Result<EventHandle> second = m->RecordEvent(0);
  Result<EventHandle> third = m->RecordEvent(0);
  ASSERT_TRUE(first.ok() && second.ok() && third.ok());
  EXPECT_FALSE(m->EventCompleted(*first));
  ASSERT_TRUE(m->WaitForEvent(*first).ok());
  EXPECT_TRUE(m->EventCompleted(*first));
  EXPECT_FALSE(m->EventCompleted(*second));
  ASSERT_TRUE(m->Synchronize().ok());
  EXPECT_TRUE(m->EventCompleted(*second));
  EXPECT_TRUE(m->EventCompleted(*third));
  Result<EventHandle> after = m->RecordEvent(0);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(m->EventCompleted(*after));  // recorded after the synchronisation
  m->CompleteEvents();
  EXPECT_TRUE(m->EventCompleted(*after));
}

// Streams are independent, as on a device: a wait for one stream's event
// completes that stream's work up to it, not another stream's recorded
// earlier (the host used to complete every event up to it, which could
// hide a wait on the wrong stream).
TEST(HostPhysicalMemory, AWaitCompletesOnlyItsOwnStream) {
  for (bool lagging : {false, true}) {
    SCOPED_TRACE(lagging);
    HostPhysicalMemoryParams hp;
    hp.manual_events = !lagging;
    hp.event_lag = lagging ? std::uint64_t{1} << 40 : 0;
    auto m = Host(hp);
    Result<EventHandle> a1 = m->RecordEvent(1);
    Result<EventHandle> b1 = m->RecordEvent(2);
    Result<EventHandle> a2 = m->RecordEvent(1);
    Result<EventHandle> b2 = m->RecordEvent(2);
    ASSERT_TRUE(a1.ok() && b1.ok() && a2.ok() && b2.ok());
    ASSERT_TRUE(m->WaitForEvent(*a2).ok());
    EXPECT_TRUE(m->EventCompleted(*a1));
    EXPECT_TRUE(m->EventCompleted(*a2));
    EXPECT_FALSE(m->EventCompleted(*b1));  // recorded before a2, on another stream
    EXPECT_FALSE(m->EventCompleted(*b2));
    ASSERT_TRUE(m->WaitForEvent(*b1).ok());
    EXPECT_TRUE(m->EventCompleted(*b1));
    EXPECT_FALSE(m->EventCompleted(*b2));
    if (!lagging) {
      m->CompleteEvents(2);
      EXPECT_TRUE(m->EventCompleted(*b2));
      Result<EventHandle> a3 = m->RecordEvent(1);
      ASSERT_TRUE(a3.ok());
      m->CompleteEvents(2);
      EXPECT_FALSE(m->EventCompleted(*a3));
    }
    ASSERT_TRUE(m->Synchronize().ok());
    EXPECT_TRUE(m->EventCompleted(*b2));
  }
}

TEST(HostPhysicalMemory, GranulesMapAnywhereAndKeepTheirBytes) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  Result<void*> range = m->ReserveAddressRange(8 * g);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(*range) % g, 0u);
  char* base = static_cast<char*>(*range);
  std::vector<GranuleHandle> h;
  ASSERT_TRUE(m->CreateGranules(2, h).ok());
  EXPECT_EQ(m->granules_held(), 2u);
  ASSERT_TRUE(m->Map(base, h).ok());
  std::memset(base, 0xAB, g);
  std::memset(base + g, 0xCD, g);
  ASSERT_TRUE(m->Unmap(base, 2).ok());
  // Stitched elsewhere, in the other order: the bytes follow the granules.
  const GranuleHandle swapped[] = {h[1], h[0]};
  ASSERT_TRUE(m->Map(base + 5 * g, swapped).ok());
  EXPECT_EQ(static_cast<unsigned char>(base[5 * g]), 0xCD);
  EXPECT_EQ(static_cast<unsigned char>(base[6 * g + g - 1]), 0xAB);
  ASSERT_TRUE(m->Unmap(base + 5 * g, 2).ok());
  EXPECT_EQ(m->ReleaseGranule(h[0]).code(), StatusCode::kOk);
  EXPECT_EQ(m->ReleaseGranule(h[0]).code(), StatusCode::kNotFound);  // twice
  EXPECT_EQ(m->Map(base, std::span<const GranuleHandle>(h.data(), 1)).code(), StatusCode::kNotFound);
  ASSERT_TRUE(m->ReleaseGranule(h[1]).ok());
  EXPECT_EQ(m->granules_held(), 0u);
  EXPECT_EQ(m->ReserveAddressRange(g + 1).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(m->FreeAddressRange(base, 8 * g).ok());
}

TEST(HostPhysicalMemory, HandlesOfSeveralGranulesMoveAsAWhole) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  Result<void*> range = m->ReserveAddressRange(16 * g);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  char* base = static_cast<char*>(*range);
  std::vector<GranuleHandle> h;
  ASSERT_TRUE(m->CreateGranules(2, h, 4).ok());
  EXPECT_EQ(m->granules_held(), 8u);
  ASSERT_TRUE(m->Map(base, h, 4).ok());
  std::memset(base, 0x11, 4 * g);
  std::memset(base + 4 * g, 0x22, 4 * g);
  ASSERT_TRUE(m->Unmap(base, 2, 4).ok());
  const GranuleHandle swapped[] = {h[1], h[0]};
  ASSERT_TRUE(m->Map(base + 8 * g, swapped, 4).ok());
  EXPECT_EQ(static_cast<unsigned char>(base[8 * g]), 0x22);
  EXPECT_EQ(static_cast<unsigned char>(base[12 * g + 4 * g - 1]), 0x11);
  ASSERT_TRUE(m->Unmap(base + 8 * g, 2, 4).ok());
  // A handle is used with its own size only.
  EXPECT_EQ(m->Map(base, std::span<const GranuleHandle>(h.data(), 1), 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m->ReleaseGranule(h[0], 2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m->CreateGranules(1, h, 0).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(m->ReleaseGranule(h[0], 4).ok());
  EXPECT_EQ(m->ReleaseGranule(h[0], 4).code(), StatusCode::kNotFound);
  // Its indices serve the next handle of the same size.
  std::vector<GranuleHandle> again;
  ASSERT_TRUE(m->CreateGranules(1, again, 4).ok());
  EXPECT_EQ(again[0], h[0]);
  ASSERT_TRUE(m->ReleaseGranule(again[0], 4).ok());
  ASSERT_TRUE(m->ReleaseGranule(h[1], 4).ok());
  EXPECT_EQ(m->granules_held(), 0u);
  ASSERT_TRUE(m->FreeAddressRange(base, 16 * g).ok());
}

TEST(VmmAllocator, ValidatesEveryParameter) {
  auto m = Host();
  std::vector<VmmParams> bad(14);
  bad[0].block_rounding_bytes = 0;
  bad[1].block_rounding_bytes = 384;
  bad[2].block_rounding_bytes = std::uint64_t{1} << 20;
  bad[3].memory_limit = 0;
  bad[4].memory_limit = 4096;  // less than a granule
  bad[5].address_space_bytes = 1024;
  bad[6].growth_slack = -0.01;
  bad[7].growth_slack = 1.5;
  bad[8].growth_slack = std::nan("");
  bad[9].max_handle_granules = 0;
  bad[10].max_handle_granules = (std::uint64_t{1} << 20) + 1;
  bad[11].grow_ahead = -0.01;
  bad[12].grow_ahead = 1.5;
  bad[13].grow_ahead = std::nan("");
  for (std::size_t i = 0; i < bad.size(); ++i)
    EXPECT_EQ(VmmAllocator::Create(*m, bad[i]).status().code(), StatusCode::kInvalidArgument) << i;
  VmmParams huge_small;
  huge_small.small_request_bytes = std::uint64_t{1} << 45;
  EXPECT_EQ(Validate(huge_small).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Validate(VmmParams{}).ok());
}

TEST(VmmAllocator, ARepeatOfTheSameRequestCostsNoMapCall) {
  auto m = Host();
  auto v = Vmm(*m);
  for (std::uint64_t bytes : {std::uint64_t{1000}, 3 * kMiB, 64 * kMiB}) {
    Result<void*> a = v->Allocate(bytes);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    Fill(*a, bytes, 7);
    ASSERT_TRUE(v->Deallocate(*a).ok());
    const auto before = v->counters();
    for (int i = 0; i < 10; ++i) {
      Result<void*> b = v->Allocate(bytes);
      ASSERT_TRUE(b.ok());
      EXPECT_EQ(*b, *a);
      ASSERT_TRUE(v->Deallocate(*b).ok());
    }
    EXPECT_EQ(v->counters().map_calls, before.map_calls) << bytes;
    EXPECT_EQ(v->counters().granules_created, before.granules_created) << bytes;
  }
}

// A training loop whose blocks sit at different addresses in each phase:
// A (10 granules) and B (10), A freed, C (15) at the top. Holding only the
// pages touched at once (25) means re-stitching A's pages in every
// iteration, an unmap and a map per page on a GPU; growth_slack lets the
// memory held cover the whole footprint (35, within 1.5 x 25) and the
// steady state makes no map call at all.
TEST(VmmAllocator, GrowthSlackEndsReStitchingInASteadyState) {
  for (double slack : {0.0, 0.5}) {
    SCOPED_TRACE(slack);
    auto m = Host();
    const std::uint64_t g = m->granularity();
    VmmParams p;
    p.growth_slack = slack;
    auto v = Vmm(*m, p);
    auto iteration = [&] {
      Result<void*> a = v->Allocate(10 * g), b = v->Allocate(10 * g);
      ASSERT_TRUE(a.ok() && b.ok());
      Fill(*a, 10 * g, 1);
      Fill(*b, 10 * g, 2);
      ASSERT_TRUE(v->Deallocate(*a).ok());
      Result<void*> c = v->Allocate(15 * g);
      ASSERT_TRUE(c.ok());
      Fill(*c, 15 * g, 3);
      EXPECT_TRUE(Intact(*b, 10 * g, 2));
      ASSERT_TRUE(v->Deallocate(*b).ok());
      ASSERT_TRUE(v->Deallocate(*c).ok());
    };
    iteration();
    const VmmAllocator::Counters first = v->counters();
    iteration();
    iteration();
    const VmmAllocator::Counters steady = v->counters();
    const std::uint64_t held = v->GetStats().peak_bytes_reserved / g;
    if (slack == 0.0) {
      EXPECT_EQ(held, 25u);
      EXPECT_GT(steady.pages_restitched, first.pages_restitched);
    } else {
      EXPECT_EQ(held, 35u);
      EXPECT_EQ(steady.map_calls, first.map_calls);
      EXPECT_EQ(steady.pages_restitched, 0u);
    }
  }
}

// Re-stitching takes the newest cached page that needs no wait (as a cache
// under a loop evicts; the oldest is what the next iteration reaches
// first), and waits for the device only when the safe pages do not suffice.
TEST(VmmAllocator, ReStitchingTakesTheNewestPageThatNeedsNoWait) {
  for (bool device_lags : {false, true}) {
    SCOPED_TRACE(device_lags);
    HostPhysicalMemoryParams hp;
    hp.manual_events = device_lags;
    auto m = Host(hp);
    const std::uint64_t g = m->granularity();
    VmmParams p;
    p.memory_limit = 6 * g;
    auto v = Vmm(*m, p);
    // A X B Y C Z, one granule each; X, Y, Z stay live so nothing coalesces.
    std::vector<void*> blocks;
    for (int i = 0; i < 6; ++i) {
      Result<void*> b = v->Allocate(g);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      blocks.push_back(*b);
    }
    void* a = blocks[0];
    void* b = blocks[2];
    void* c = blocks[4];
    ASSERT_TRUE(v->Deallocate(a).ok());
    if (device_lags) m->CompleteEvents();  // A's fence completes; B's and C's do not
    ASSERT_TRUE(v->Deallocate(b).ok());
    ASSERT_TRUE(v->Deallocate(c).ok());
    // Two pages at the top, at the limit: two cached pages are re-stitched.
    Result<void*> w = v->Allocate(2 * g);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(v->counters().pages_restitched, 2u);
    // Which one stayed mapped: a repeat of A's request gets it without a map call.
    const std::uint64_t maps = v->counters().map_calls;
    Result<void*> again = v->Allocate(g);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(v->counters().map_calls, maps);
    if (!device_lags) {
      // All safe: C then B taken, A (the oldest) kept.
      EXPECT_EQ(*again, a);
      EXPECT_EQ(v->counters().synchronizations, 0u);
    } else {
      // Only A was safe: A taken, then a wait for the fence recorded at B's
      // free (less than a synchronization), then B; C, freed after it, kept.
      EXPECT_EQ(*again, c);
      EXPECT_EQ(v->counters().event_waits, 1u);
      EXPECT_EQ(v->counters().synchronizations, 0u);
    }
  }
}

// A Y1 B Y2 (two granules, one, two, one; A and Y1 on stream `first`, B and
// Y2 on `second`), A and B freed on their streams, then C of four granules
// on `first`: it fits neither hole, so four pages at the top, which the
// cached pages of A and B can back. Every pattern is checked; returns the
// counters after C (before C, Y1 and Y2 are freed).
VmmAllocator::Counters FreeTwoHolesThenAskForFour(VmmAllocator& v, std::uint64_t g, StreamHandle first,
                                                  StreamHandle second) {
  std::vector<void*> blocks;
  for (auto [pages, stream] : {std::pair{2, first}, std::pair{1, first}, std::pair{2, second}, std::pair{1, second}}) {
    Result<void*> b = v.AllocateAsync(pages * g, stream);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) return {};
    Fill(*b, pages * g, static_cast<std::uint8_t>(pages));
    blocks.push_back(*b);
  }
  EXPECT_TRUE(v.DeallocateAsync(blocks[0], first).ok());
  EXPECT_TRUE(v.DeallocateAsync(blocks[2], second).ok());
  Result<void*> c = v.AllocateAsync(4 * g, first);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return {};
  Fill(*c, 4 * g, 4);
  EXPECT_TRUE(Intact(*c, 4 * g, 4));
  EXPECT_TRUE(Intact(blocks[1], g, 1));
  EXPECT_TRUE(Intact(blocks[3], g, 1));
  const VmmAllocator::Counters k = v.counters();
  for (void* q : {*c, blocks[1], blocks[3]}) EXPECT_TRUE(v.DeallocateAsync(q, first).ok());
  return k;
}

// A device behind the host (a GPU runs its queue after the host frees):
// pages it may still use are waited for, first the pending fence (it covers
// A), then the device (for B, freed after it), not grown past; growing
// first holds the peak plus the waited-for pages.
TEST(VmmAllocator, ADeviceBehindTheHostIsWaitedForNotGrownPast) {
  for (bool restitch_first : {true, false}) {
    SCOPED_TRACE(restitch_first);
    HostPhysicalMemoryParams hp;
    hp.event_lag = 1000;  // never reached here: only waits complete events
    auto m = Host(hp);
    const std::uint64_t g = m->granularity();
    VmmParams p;
    p.restitch_before_growing = restitch_first;
    p.max_handle_granules = 1;
    auto v = Vmm(*m, p);
    const VmmAllocator::Counters k = FreeTwoHolesThenAskForFour(*v, g, 0, 0);
    if (restitch_first) {
      EXPECT_EQ(k.event_waits, 1u);  // the fence recorded at A's free; B's came while it was pending
      EXPECT_EQ(k.synchronizations, 1u);
      EXPECT_EQ(k.pages_restitched, 4u);
      EXPECT_EQ(v->GetStats().peak_bytes_reserved, 6 * g);  // the most pages touched at once
    } else {
      EXPECT_EQ(k.event_waits, 0u);
      EXPECT_EQ(k.synchronizations, 0u);
      EXPECT_EQ(k.pages_restitched, 0u);
      EXPECT_EQ(v->GetStats().peak_bytes_reserved, 10 * g);
    }
  }
}

// With several streams the fences are the frees' own events: a re-stitch
// waits for those of the pages it takes, in order, not for the device.
TEST(VmmAllocator, WithSeveralStreamsAReStitchWaitsForTheFreesEvents) {
  HostPhysicalMemoryParams hp;
  hp.manual_events = true;  // nothing completes unless waited for
  auto m = Host(hp);
  const std::uint64_t g = m->granularity();
  VmmParams p;
  p.max_handle_granules = 1;
  auto v = Vmm(*m, p);
  const VmmAllocator::Counters k = FreeTwoHolesThenAskForFour(*v, g, 1, 2);
  EXPECT_EQ(k.event_waits, 2u);  // A's free, then B's
  EXPECT_EQ(k.synchronizations, 0u);
  EXPECT_EQ(k.pages_restitched, 4u);
  EXPECT_EQ(v->GetStats().peak_bytes_reserved, 6 * g);
}

// New granules for a run of pages come as handles of up to
// max_handle_granules (one create and one map call each on a GPU).
TEST(VmmAllocator, ARunOfNewPagesComesAsFewHandles) {
  for (std::uint64_t max_handle : {std::uint64_t{1}, std::uint64_t{4}, std::uint64_t{16}}) {
    SCOPED_TRACE(max_handle);
    auto m = Host();
    const std::uint64_t g = m->granularity();
    VmmParams p;
    p.max_handle_granules = max_handle;
    auto v = Vmm(*m, p);
    Result<void*> a = v->Allocate(10 * g);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    Fill(*a, 10 * g, 9);
    const std::uint64_t handles = (10 + max_handle - 1) / max_handle;
    EXPECT_EQ(v->counters().handles_created, handles);
    EXPECT_EQ(v->counters().handles_mapped, handles);
    EXPECT_EQ(v->counters().granules_created, 10u);
    EXPECT_EQ(m->call_counts().create, handles);
    // One map call per run of handles of one size: 10 singles; 4 + 4, then 2; one of 10. (On a
    // GPU each handle is still mapped, but access is set once a call.)
    const std::uint64_t calls = max_handle == 4 ? 2 : 1;
    EXPECT_EQ(v->counters().map_calls, calls);
    EXPECT_EQ(m->call_counts().map, calls);  // the host's mmaps: the handles' granules are consecutive
    EXPECT_TRUE(Intact(*a, 10 * g, 9));
    ASSERT_TRUE(v->Deallocate(*a).ok());
    Result<std::uint64_t> released = v->ReleaseCachedMemory();
    ASSERT_TRUE(released.ok());
    EXPECT_EQ(*released, 10 * g);
    EXPECT_EQ(m->granules_held(), 0u);
  }
}

// A run handle moves only whole: while a live block is on one of its pages
// the others stay where they are (a request that needs them fails under the
// limit); once none is, it is released and its granules created again where
// they are needed (here a run of five pages: no place of its size).
TEST(VmmAllocator, ARunHandleMovesOnlyWhole) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  VmmParams p;
  p.memory_limit = 6 * g;
  auto v = Vmm(*m, p);
  Result<void*> a = v->Allocate(4 * g);  // pages 0-3: one handle
  Result<void*> x = v->Allocate(g);      // page 4: keeps A's block off the top
  ASSERT_TRUE(a.ok() && x.ok());
  Fill(*x, g, 8);
  ASSERT_TRUE(v->Deallocate(*a).ok());
  const std::uint64_t d_bytes = g / 2 + 4096;  // over 1 MiB: the large space
  Result<void*> d = v->Allocate(d_bytes);      // back on page 0
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, *a);
  Fill(*d, d_bytes, 4);
  Result<void*> e = v->Allocate(4 * g);  // at the top: pages 1-3 cannot move
  EXPECT_EQ(e.status().code(), StatusCode::kResourceExhausted) << e.status().ToString();
  EXPECT_EQ(v->GetStats().bytes_reserved, 5 * g);
  EXPECT_EQ(v->counters().granules_released, 0u);
  EXPECT_TRUE(Intact(*d, d_bytes, 4));
  ASSERT_TRUE(v->Deallocate(*d).ok());
  e = v->Allocate(5 * g);  // now A's handle goes whole, its granules made again at the top
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Fill(*e, 5 * g, 5);
  EXPECT_EQ(v->counters().granules_released, 4u);
  EXPECT_EQ(v->GetStats().bytes_reserved, 6 * g);
  EXPECT_EQ(m->granules_held(), 6u);
  EXPECT_TRUE(Intact(*e, 5 * g, 5));
  EXPECT_TRUE(Intact(*x, g, 8));
  ASSERT_TRUE(v->Deallocate(*e).ok());
  ASSERT_TRUE(v->Deallocate(*x).ok());
}

// Where the pages to back are cut into a handle of a free run handle's very
// size, that handle is mapped there whole: an unmap and a map, as a new
// handle would need, but no release and no create.
TEST(VmmAllocator, AFreeRunHandleMovesWholeWhereARunOfItsSizeNeedsPages) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  VmmParams p;
  p.memory_limit = 9 * g;
  p.max_handle_granules = 4;
  auto v = Vmm(*m, p);
  Result<void*> a = v->Allocate(4 * g);  // pages 0-3: one handle
  Result<void*> x = v->Allocate(g);      // page 4: keeps A's block off the top
  ASSERT_TRUE(a.ok() && x.ok());
  Fill(*a, 4 * g, 3);
  Fill(*x, g, 8);
  ASSERT_TRUE(v->Deallocate(*a).ok());
  const HostPhysicalMemory::CallCounts before = m->call_counts();
  Result<void*> e = v->Allocate(8 * g);  // pages 5-12: two handles of four; A's is one of them
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Fill(*e, 8 * g, 5);
  const HostPhysicalMemory::CallCounts after = m->call_counts();
  EXPECT_EQ(v->counters().handles_moved, 1u);
  EXPECT_EQ(v->counters().granules_released, 0u);
  EXPECT_EQ(after.create - before.create, 1u);   // the other four pages
  EXPECT_EQ(after.release - before.release, 0u);
  EXPECT_EQ(after.map - before.map, 2u);         // a map per handle, as for two new ones
  EXPECT_EQ(m->granules_held(), 9u);
  EXPECT_EQ(v->GetStats().bytes_reserved, 9 * g);
  EXPECT_TRUE(Intact(*e, 8 * g, 5));
  EXPECT_TRUE(Intact(*x, g, 8));
  ASSERT_TRUE(v->Deallocate(*e).ok());
  ASSERT_TRUE(v->Deallocate(*x).ok());
  Result<std::uint64_t> released = v->ReleaseCachedMemory();
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(m->granules_held(), 0u);
}

TEST(VmmAllocator, FreedGranulesAnywhereServeARequestElsewhere) {
  // Four separate 2 MiB blocks, every other one freed: a 4 MiB request finds
  // no free range, and is served by the two freed granules stitched at new
  // addresses, with no new granule.
  auto m = Host();
  VmmParams p;
  p.small_request_bytes = 0;
  auto v = Vmm(*m, p);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) {
    Result<void*> a = v->Allocate(2 * kMiB);
    ASSERT_TRUE(a.ok());
    Fill(*a, 2 * kMiB, static_cast<std::uint8_t>(i));
    blocks.push_back(*a);
  }
  ASSERT_TRUE(v->Deallocate(blocks[0]).ok());
  ASSERT_TRUE(v->Deallocate(blocks[2]).ok());
  const std::uint64_t held = m->granules_held();
  Result<void*> big = v->Allocate(4 * kMiB);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  Fill(*big, 4 * kMiB, 99);
  EXPECT_EQ(m->granules_held(), held);
  EXPECT_EQ(v->counters().pages_restitched, 2u);
  EXPECT_TRUE(Intact(blocks[1], 2 * kMiB, 1));
  EXPECT_TRUE(Intact(blocks[3], 2 * kMiB, 3));
  EXPECT_TRUE(Intact(*big, 4 * kMiB, 99));
  EXPECT_EQ(v->GetStats().peak_bytes_reserved, 4 * 2 * kMiB);
  for (void* b : {blocks[1], blocks[3], *big}) ASSERT_TRUE(v->Deallocate(b).ok());
}

// A free block whose low pages were re-stitched away and whose high pages
// are still cached: a request that fits goes on the cached pages (its high
// end), with no map call, not on its low end (a re-stitch).
TEST(VmmAllocator, ARequestGoesWhereAFreeBlockStillHasPagesMapped) {
  auto m = Host();
  VmmParams p;
  p.small_request_bytes = 0;
  p.max_handle_granules = 1;
  auto v = Vmm(*m, p);
  Result<void*> a = v->Allocate(4 * kMiB);  // pages 0-1 (2 MiB granules)
  Result<void*> b = v->Allocate(4 * kMiB);  // pages 2-3
  Result<void*> guard = v->Allocate(2 * kMiB);  // page 4
  ASSERT_TRUE(a.ok() && b.ok() && guard.ok());
  Fill(*guard, 2 * kMiB, 5);
  ASSERT_TRUE(v->Deallocate(*a).ok());
  Result<void*> c = v->Allocate(8 * kMiB);  // at the top, on a's re-stitched pages and two new ones
  ASSERT_TRUE(c.ok());
  Fill(*c, 8 * kMiB, 6);
  ASSERT_EQ(v->counters().pages_restitched, 2u);
  ASSERT_TRUE(v->Deallocate(*b).ok());  // free pages 0-3: 0-1 unmapped, 2-3 cached
  const auto before = v->counters();
  Result<void*> d = v->Allocate(4 * kMiB);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, *b);  // its pages, still cached
  EXPECT_EQ(v->counters().map_calls, before.map_calls);
  EXPECT_EQ(v->counters().pages_restitched, before.pages_restitched);
  Fill(*d, 4 * kMiB, 7);
  // An aligned request in what is left (pages 0-1, unmapped) is aligned and
  // overlaps nothing live.
  Result<void*> e = v->Allocate(kMiB, std::uint64_t{1} << 20);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(*e) % (std::uint64_t{1} << 20), 0u);
  Fill(*e, kMiB, 8);
  EXPECT_TRUE(Intact(*c, 8 * kMiB, 6));
  EXPECT_TRUE(Intact(*d, 4 * kMiB, 7));
  EXPECT_TRUE(Intact(*guard, 2 * kMiB, 5));
  EXPECT_TRUE(Intact(*e, kMiB, 8));
  for (void* x : {*c, *d, *e, *guard}) ASSERT_TRUE(v->Deallocate(x).ok());
}

// Why one space is the default: a page a small block leaves cached serves
// a large block where it is, with no map call. With a small space the
// page is in the other space and must be re-stitched (an unmap and a map).
TEST(VmmAllocator, InOneSpaceAPageASmallBlockLeftCachedServesALargeOneWithoutAMapCall) {
  std::uint64_t calls[2] = {0, 0};
  for (const std::uint64_t small : {std::uint64_t{0}, kMiB}) {
    auto m = Host();
    const std::uint64_t g = m->granularity();
    VmmParams p;
    p.small_request_bytes = small;
    auto v = Vmm(*m, p);
    Result<void*> a = v->Allocate(2 * g);  // whole granules: the next block starts a page
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    Fill(*a, 2 * g, 5);
    Result<void*> s = v->Allocate(4096);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Fill(*s, 4096, 7);
    ASSERT_TRUE(v->Deallocate(*s).ok());  // its page stays mapped: cached
    const std::uint64_t before = v->counters().map_calls;
    const std::uint64_t b_bytes = g / 2 + 4096;  // over 1 MiB
    Result<void*> b = v->Allocate(b_bytes);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    Fill(*b, b_bytes, 8);
    calls[small == 0 ? 0 : 1] = v->counters().map_calls - before;
    EXPECT_EQ(m->granules_held(), 3u);  // the same memory either way
    ASSERT_TRUE(Intact(*a, 2 * g, 5));
    ASSERT_TRUE(Intact(*b, b_bytes, 8));
    for (void* x : {*a, *b}) ASSERT_TRUE(v->Deallocate(x).ok());
  }
  EXPECT_EQ(calls[0], 0u) << "one space: the cached page serves where it is";
  EXPECT_GE(calls[1], 1u) << "two spaces: the page is re-stitched across";
}

// Sub-granule packing, with a small space: a small request lands in the
// room after a live large block's end in its last granule, with no page of
// its own; that page stays mapped, and the large block's run handle stays
// in place, until both are free. (One space, the default, gets the same
// from best fit; the stress test below runs both.)
TEST(VmmAllocator, ASmallBlockLandsInALargeBlocksLastGranuleWithNoNewPage) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  VmmParams p;
  p.memory_limit = 2 * g;
  p.small_request_bytes = kMiB;
  auto v = Vmm(*m, p);
  const std::uint64_t a_bytes = g + g / 4 + 100;  // pages 0-1: one run handle, 3/4 of page 1 unused
  Result<void*> a = v->Allocate(a_bytes);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Fill(*a, a_bytes, 1);
  const auto before = v->counters();
  const std::uint64_t s_bytes = 1000;
  Result<void*> s = v->Allocate(s_bytes);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const auto a_end = reinterpret_cast<std::uintptr_t>(*a) + a_bytes;
  const auto s_at = reinterpret_cast<std::uintptr_t>(*s);
  EXPECT_GE(s_at, a_end);
  EXPECT_LT(s_at + s_bytes, reinterpret_cast<std::uintptr_t>(*a) + 2 * g) << "not in A's last granule";
  EXPECT_EQ(v->counters().map_calls, before.map_calls);
  EXPECT_EQ(v->counters().granules_created, before.granules_created);
  EXPECT_EQ(v->GetStats().bytes_reserved, 2 * g);
  Fill(*s, s_bytes, 2);
  EXPECT_TRUE(Intact(*a, a_bytes, 1));

  // A freed: its run handle is pinned by S, so neither a release nor a
  // request that needs the handle elsewhere takes it.
  ASSERT_TRUE(v->Deallocate(*a).ok());
  ASSERT_TRUE(v->ReleaseCachedMemory().ok());
  EXPECT_EQ(v->GetStats().bytes_reserved, 2 * g);
  EXPECT_TRUE(Intact(*s, s_bytes, 2));
  Result<void*> far = v->Allocate(3 * g);  // the top: would need A's handle moved
  EXPECT_EQ(far.status().code(), StatusCode::kResourceExhausted) << far.status().ToString();
  EXPECT_TRUE(Intact(*s, s_bytes, 2));
  // A's repeat lands where it was, below S, on the pages still mapped.
  const auto mapped = v->counters().map_calls;
  Result<void*> again = v->Allocate(a_bytes);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *a);
  EXPECT_EQ(v->counters().map_calls, mapped);
  Fill(*again, a_bytes, 3);
  EXPECT_TRUE(Intact(*s, s_bytes, 2));
  ASSERT_TRUE(v->Deallocate(*s).ok());
  EXPECT_TRUE(Intact(*again, a_bytes, 3));
  ASSERT_TRUE(v->Deallocate(*again).ok());
  // Both free: the handle moves again.
  far = v->Allocate(2 * g);
  ASSERT_TRUE(far.ok()) << far.status().ToString();
  Fill(*far, 2 * g, 4);
  EXPECT_TRUE(Intact(*far, 2 * g, 4));
  ASSERT_TRUE(v->Deallocate(*far).ok());
  EXPECT_EQ(v->GetStats().bytes_in_use, 0u);
}

// With a small space, where no large block has room, a small request takes
// the small space's own page.
TEST(VmmAllocator, ASmallBlockWithNoRoomOnLargePagesTakesItsOwnPage) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  VmmParams p;
  p.small_request_bytes = kMiB;
  auto v = Vmm(*m, p);
  Result<void*> a = v->Allocate(2 * g);  // whole granules: no room after it
  ASSERT_TRUE(a.ok());
  const auto created = v->counters().granules_created;
  Result<void*> s = v->Allocate(1000);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(v->counters().granules_created, created + 1);
  const auto s_at = reinterpret_cast<std::uintptr_t>(*s), a_at = reinterpret_cast<std::uintptr_t>(*a);
  EXPECT_TRUE(s_at + 1000 <= a_at || s_at >= a_at + 2 * g) << "S on A's pages";
  ASSERT_TRUE(v->Deallocate(*s).ok());
  ASSERT_TRUE(v->Deallocate(*a).ok());
}

// Blocks of unrounded sizes (2 MiB x k and a bit, as PyTorch's CPU sizes
// are) mixed with small ones, freed in random order: small blocks pack
// into large blocks' last granules, and no block is ever overwritten. In
// one space (the default) and with a small space.
class VmmSpaces : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(VmmSpaces, SeededStressWithPackedSmallBlocksKeepsEveryPattern) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  VmmParams p;
  p.memory_limit = 256 * g;
  p.small_request_bytes = GetParam();
  auto v = Vmm(*m, p);
  std::mt19937_64 rng(56);
  struct Live { void* p; std::uint64_t bytes; std::uint8_t pattern; };
  std::vector<Live> live;
  std::uint64_t packed = 0;
  auto in_a_last_granule = [&](std::uintptr_t at) {
    for (const Live& l : live) {
      const auto start = reinterpret_cast<std::uintptr_t>(l.p);
      if (l.bytes > g / 2 && at >= start + l.bytes && at < ((start + l.bytes + g - 1) & ~(g - 1))) return true;
    }
    return false;
  };
  for (int i = 0; i < 4000; ++i) {
    if (live.empty() || (live.size() < 64 && rng() % 2 == 0)) {
      const bool large = rng() % 100 < 20;
      const std::uint64_t bytes = large ? (1 + rng() % 6) * g + 1 + rng() % (g - 1) : 1 + rng() % (64 << 10);
      const std::uint64_t align = std::uint64_t{64} << (rng() % 4);
      Result<void*> a = v->Allocate(bytes, align);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(*a) % align, 0u);
      if (!large && in_a_last_granule(reinterpret_cast<std::uintptr_t>(*a))) ++packed;
      const auto pattern = static_cast<std::uint8_t>(rng());
      Fill(*a, bytes, pattern);
      live.push_back({*a, bytes, pattern});
    } else {
      const std::size_t k = rng() % live.size();
      ASSERT_TRUE(Intact(live[k].p, live[k].bytes, live[k].pattern)) << "block overwritten";
      ASSERT_TRUE(v->Deallocate(live[k].p).ok());
      live[k] = live.back();
      live.pop_back();
    }
    if (i % 500 == 499) {
      for (const Live& l : live) ASSERT_TRUE(Intact(l.p, l.bytes, l.pattern)) << "block overwritten";
      ASSERT_TRUE(v->ReleaseCachedMemory().ok());
    }
  }
  for (const Live& l : live) {
    ASSERT_TRUE(Intact(l.p, l.bytes, l.pattern));
    ASSERT_TRUE(v->Deallocate(l.p).ok());
  }
  EXPECT_GT(packed, 100u) << "small blocks did not pack into large blocks' last granules";
  ASSERT_TRUE(v->ReleaseCachedMemory().ok());
  EXPECT_EQ(v->GetStats().bytes_in_use, 0u);
  EXPECT_EQ(v->GetStats().bytes_reserved, m->granules_held() * g);
}

INSTANTIATE_TEST_SUITE_P(OneSpaceAndTwo, VmmSpaces, ::testing::Values(std::uint64_t{0}, kMiB),
                         [](const ::testing::TestParamInfo<std::uint64_t>& param_info) {
                           return param_info.param == 0 ? std::string("OneSpace") : std::string("SmallSpaceOf1MiB");
                         });

TEST(VmmAllocator, OutOfMemoryReportsLeaksNothingAndKeepsServing) {
  auto m = Host();
  VmmParams p;
  p.memory_limit = 16 * kMiB;
  auto v = Vmm(*m, p);
  std::vector<void*> live;
  Status failure;
  while (failure.ok()) {
    Result<void*> a = v->Allocate(3 * kMiB);
    if (a.ok()) live.push_back(*a); else failure = a.status();
  }
  EXPECT_EQ(failure.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(failure.message().find("vmm: out of memory allocating 3145728 bytes"), std::string::npos)
      << failure.message();
  EXPECT_NE(failure.message().find("limit 16.0 MiB"), std::string::npos) << failure.message();
  // One space (the default): the report names no small or large space.
  EXPECT_NE(failure.message().find("\nspace: "), std::string::npos) << failure.message();
  EXPECT_LE(m->granules_held() * m->granularity(), 16 * kMiB);
  EXPECT_EQ(v->GetStats().bytes_reserved, m->granules_held() * m->granularity());
  EXPECT_EQ(v->GetStats().num_failed_allocs, 1u);
  // Still serving: free one, the same request fits again.
  ASSERT_TRUE(v->Deallocate(live.back()).ok());
  live.pop_back();
  Result<void*> again = v->Allocate(3 * kMiB);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  live.push_back(*again);
  for (void* b : live) ASSERT_TRUE(v->Deallocate(b).ok());
  Result<std::uint64_t> released = v->ReleaseCachedMemory();
  ASSERT_TRUE(released.ok());
  EXPECT_GT(*released, 0u);
  EXPECT_EQ(m->granules_held(), 0u);
  EXPECT_EQ(v->GetStats().bytes_reserved, 0u);
}

// Physical memory that refuses granules beyond a count, as a full device
// refuses cuMemCreate.
class RefusingMemory final : public PhysicalMemory {
 public:
  RefusingMemory(PhysicalMemory& below, std::uint64_t max_granules) : below_(below), max_(max_granules) {}
  std::uint64_t granularity() const override { return below_.granularity(); }
  bool host_accessible() const override { return true; }
  std::string_view name() const override { return "refusing"; }
  Result<void*> ReserveAddressRange(std::uint64_t bytes) override { return below_.ReserveAddressRange(bytes); }
  Status FreeAddressRange(void* base, std::uint64_t bytes) override { return below_.FreeAddressRange(base, bytes); }
  Status CreateGranules(std::size_t count, std::vector<GranuleHandle>& out, std::uint64_t n = 1) override {
    if (held_ + count * n > max_) return ResourceExhausted("device out of memory (test)");
    if (n > max_handle_) return ResourceExhausted("no physical run that large (test)");
    TM_RETURN_IF_ERROR(below_.CreateGranules(count, out, n));
    held_ += count * n;
    return Status::Ok();
  }
  Status ReleaseGranule(GranuleHandle g, std::uint64_t n = 1) override {
    TM_RETURN_IF_ERROR(below_.ReleaseGranule(g, n));
    held_ -= n;
    return Status::Ok();
  }
  Status Map(void* a, std::span<const GranuleHandle> g, std::uint64_t n = 1) override {
    return below_.Map(a, g, n);
  }
  Status Unmap(void* a, std::size_t count, std::uint64_t n = 1) override {
    if (unmaps_left_ == 0) return Internal("cannot unmap (test)");
    --unmaps_left_;
    return below_.Unmap(a, count, n);
  }
  Status Synchronize() override { return below_.Synchronize(); }
  Result<EventHandle> RecordEvent(StreamHandle s) override {
    if (refuse_events_) return Internal("cannot record an event (test)");
    return below_.RecordEvent(s);
  }
  bool EventCompleted(EventHandle e) override { return below_.EventCompleted(e); }
  Status WaitForEvent(EventHandle e) override { return below_.WaitForEvent(e); }
  void DestroyEvent(EventHandle e) override { below_.DestroyEvent(e); }
  std::uint64_t held() const { return held_; }
  // Refuses handles of more granules (a device whose free memory is fragmented).
  void set_max_handle_granules(std::uint64_t n) { max_handle_ = n; }
  // Refuses to record events (a device in an error state).
  void set_refuse_events(bool refuse) { refuse_events_ = refuse; }
  // Refuses every unmap after the next `n`.
  void set_unmaps_left(std::uint64_t n) { unmaps_left_ = n; }

 private:
  bool refuse_events_ = false;
  std::uint64_t unmaps_left_ = ~std::uint64_t{0};
  PhysicalMemory& below_;
  std::uint64_t max_;
  std::uint64_t max_handle_ = ~std::uint64_t{0};
  std::uint64_t held_ = 0;
};

TEST(VmmAllocator, ADeviceThatRefusesGranulesGivesAReportAndTheAllocatorGoesOn) {
  auto host = Host();
  RefusingMemory device(*host, 5);  // 10 MiB
  auto v = Vmm(device);
  Result<void*> a = v->Allocate(6 * kMiB);  // 3 granules
  ASSERT_TRUE(a.ok());
  Result<void*> b = v->Allocate(6 * kMiB);  // 3 more: only 2 are granted
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find("the device refused: device out of memory (test)"), std::string::npos)
      << b.status().message();
  // The granules it did get are held, accounted and reused, not leaked.
  EXPECT_EQ(v->GetStats().bytes_reserved, device.held() * device.granularity());
  Result<void*> c = v->Allocate(4 * kMiB);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(device.held(), 5u);
  ASSERT_TRUE(v->Deallocate(*a).ok());
  Result<void*> d = v->Allocate(6 * kMiB);  // a's granules, re-stitched
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(device.held(), 5u);
  for (void* p : {*c, *d}) ASSERT_TRUE(v->Deallocate(p).ok());
  ASSERT_TRUE(v->ReleaseCachedMemory().ok());
  EXPECT_EQ(device.held(), 0u);
}

// The device refuses new granules while a free run handle sits in the
// cache: the handle goes back to the device and its memory is taken again
// as single granules for the request.
TEST(VmmAllocator, ARefusedCreateTakesBackAFreeRunHandle) {
  auto host = Host();
  RefusingMemory device(*host, 6);
  const std::uint64_t g = device.granularity();
  VmmParams p;
  p.growth_slack = 1.0;  // create before re-stitching, so the refusal comes first
  auto v = Vmm(device, p);
  Result<void*> a = v->Allocate(4 * g);  // one run handle
  Result<void*> x = v->Allocate(g);      // keeps A's block off the top
  ASSERT_TRUE(a.ok() && x.ok());
  ASSERT_TRUE(v->Deallocate(*a).ok());
  Result<void*> e = v->Allocate(5 * g);  // at the top: only 1 new granule fits the device
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Fill(*e, 5 * g, 6);
  EXPECT_EQ(device.held(), 6u);
  EXPECT_EQ(v->counters().granules_released, 4u);
  EXPECT_EQ(v->GetStats().bytes_reserved, 6 * g);
  EXPECT_TRUE(Intact(*e, 5 * g, 6));
  ASSERT_TRUE(v->Deallocate(*e).ok());
  ASSERT_TRUE(v->Deallocate(*x).ok());
}

// grow_ahead: a heap growing one granule at a time makes one create and
// one map call per run handle, the pages ahead of each growth bounded by the
// share of what is held (1.0: as many as are held, so the handles double:
// 2, 4, 8 granules); the pages created ahead are cached (mapped, no block on
// them) until the next blocks land on them, and go back with the cache.
// Without it, a call per block.
TEST(VmmAllocator, GrowAheadFillsTheRunHandleOfABlockThatGrowsTheHeap) {
  for (const double ahead : {1.0, 0.0}) {
    auto m = Host();
    const std::uint64_t g = m->granularity();
    VmmParams p;
    p.grow_ahead = ahead;
    p.max_handle_granules = 8;
    auto v = Vmm(*m, p);
    std::vector<void*> blocks;
    for (int i = 0; i < 12; ++i) {
      Result<void*> b = v->Allocate(g);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      Fill(*b, g, static_cast<std::uint8_t>(i));
      blocks.push_back(*b);
      if (ahead > 0 && i == 0) {
        EXPECT_EQ(v->GetStats().bytes_reserved, 2 * g) << "one granule ahead of the first";
      }
    }
    const VmmAllocator::Counters c = v->counters();
    EXPECT_EQ(c.handles_created, ahead > 0 ? 3u : 12u) << ahead;
    EXPECT_EQ(c.map_calls, ahead > 0 ? 3u : 12u) << ahead;
    EXPECT_EQ(v->GetStats().bytes_reserved, (ahead > 0 ? 14 : 12) * g) << ahead;
    for (int i = 0; i < 12; ++i) EXPECT_TRUE(Intact(blocks[i], g, static_cast<std::uint8_t>(i))) << i;
    for (void* b : blocks) ASSERT_TRUE(v->Deallocate(b).ok());
    ASSERT_TRUE(v->ReleaseCachedMemory().ok());
    EXPECT_EQ(v->GetStats().bytes_reserved, 0u);
  }
}

// The share of what is held bounds the pages created ahead (none ahead of
// a first block with a small share), and so does the memory limit.
TEST(VmmAllocator, GrowAheadStaysWithinItsShareAndTheLimit) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  VmmParams p;
  p.grow_ahead = 0.25;  // a granule ahead per 4 held
  auto small = Vmm(*m, p);
  Result<void*> a = small->Allocate(g);  // 1 held: nothing ahead
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(small->GetStats().bytes_reserved, g);
  Result<void*> b = small->Allocate(8 * g);  // 9 held: 2 ahead
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(small->GetStats().bytes_reserved, 11 * g);
  for (void* x : {*a, *b}) ASSERT_TRUE(small->Deallocate(x).ok());

  p.grow_ahead = 1.0;
  p.memory_limit = 3 * g;
  auto limited = Vmm(*m, p);
  Result<void*> c = limited->Allocate(2 * g);  // the share allows 2 ahead, the limit 1
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(limited->GetStats().bytes_reserved, 3 * g);
  Result<void*> d = limited->Allocate(g);  // lands on the page created ahead
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(limited->counters().map_calls, 1u);
  EXPECT_EQ(limited->Allocate(g).status().code(), StatusCode::kResourceExhausted);
  for (void* x : {*c, *d}) ASSERT_TRUE(limited->Deallocate(x).ok());
}

// A device that cannot give the pages ahead still serves the block itself:
// the allocation is tried again without them.
TEST(VmmAllocator, GrowAheadNeverCausesAnOutOfMemory) {
  auto host = Host();
  RefusingMemory device(*host, 3);
  const std::uint64_t g = device.granularity();
  VmmParams p;
  p.grow_ahead = 1.0;  // would fill a 16-granule handle
  auto v = Vmm(device, p);
  Result<void*> a = v->Allocate(2 * g);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Fill(*a, 2 * g, 3);
  EXPECT_LE(device.held(), 3u);
  Result<void*> b = v->Allocate(g);  // the third granule
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(v->Allocate(g).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Intact(*a, 2 * g, 3));
  for (void* x : {*a, *b}) ASSERT_TRUE(v->Deallocate(x).ok());
}

// protect_refaulted: a loop of one small and four large requests, after a
// larger heap left pages cached. Taking the newest cached page first, each
// iteration takes a page the same iteration needs again at its place, which
// then takes another: map calls every iteration, forever. Passing over the
// pages needed again soon after they were taken, the loop settles on pages
// of its own and stops mapping, holding no more.
TEST(VmmAllocator, ProtectRefaultedStopsASteadyLoopMovingItsPages) {
  struct Step {
    bool allocate;
    int block;
    std::uint64_t bytes;
  };
  // Sizes as a 2 MiB-granule heap sees them: a quarter, a half, one and a
  // bit, and nearly one granule.
  const std::vector<std::uint64_t> before = {251658, 996147, 2359296, 996147, 996147};
  const std::vector<Step> loop = {{true, 0, 996147},  {true, 1, 1184890}, {false, 0, 0},
                                  {true, 2, 1981808}, {true, 3, 251658},  {true, 4, 1981808},
                                  {false, 1, 0},      {false, 2, 0},      {false, 3, 0},
                                  {false, 4, 0}};
  std::uint64_t held[2] = {0, 0};
  for (const bool protect : {false, true}) {
    auto m = Host();
    ASSERT_EQ(m->granularity(), 2 * kMiB);
    VmmParams p;
    p.protect_refaulted = protect;
    p.small_request_bytes = kMiB;  // two spaces: the small block's page is what the large ones take
    auto v = Vmm(*m, p);
    std::vector<void*> first;
    for (const std::uint64_t bytes : before) first.push_back(*v->Allocate(bytes));
    for (void* b : first) ASSERT_TRUE(v->Deallocate(b).ok());
    std::uint64_t late_calls = 0;
    for (int iteration = 0; iteration < 20; ++iteration) {
      const std::uint64_t calls = v->counters().map_calls;
      void* live[5] = {};
      std::uint64_t sizes[5] = {};
      for (const Step& s : loop) {
        const auto pattern = static_cast<std::uint8_t>(s.block + 16 * iteration);
        if (s.allocate) {
          Result<void*> b = v->Allocate(s.bytes);
          ASSERT_TRUE(b.ok()) << b.status().ToString();
          Fill(*b, s.bytes, pattern);
          live[s.block] = *b;
          sizes[s.block] = s.bytes;
          continue;
        }
        EXPECT_TRUE(Intact(live[s.block], sizes[s.block], pattern)) << iteration << " " << s.block;
        ASSERT_TRUE(v->Deallocate(live[s.block]).ok());
      }
      if (iteration >= 10) late_calls += v->counters().map_calls - calls;
    }
    held[protect] = v->GetStats().bytes_reserved;
    if (protect) {
      EXPECT_EQ(late_calls, 0u) << "the loop settles";
    } else {
      EXPECT_GE(late_calls, 10u) << "the newest cached page is one the loop needs again";
    }
  }
  EXPECT_LE(held[1], held[0]);
  EXPECT_FALSE(VmmParams{}.protect_refaulted) << "off by default";
}

// PyTorch's set_per_process_memory_fraction: a limit set after creation
// refuses new granules; what is held stays held and serves later requests.
TEST(VmmAllocator, SetMemoryLimitRefusesNewGranulesAndKeepsWhatIsHeld) {
  auto m = Host();
  auto v = Vmm(*m);
  Result<void*> a = v->Allocate(4 * kMiB);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(v->SetMemoryLimit(kMiB).code(), StatusCode::kInvalidArgument);  // below one granule
  ASSERT_TRUE(v->SetMemoryLimit(2 * kMiB).ok());  // below what is held
  EXPECT_EQ(v->params().memory_limit, 2 * kMiB);
  EXPECT_EQ(v->GetStats().bytes_limit, 2 * kMiB);
  Result<void*> b = v->Allocate(2 * kMiB);
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find("limit"), std::string::npos) << b.status().ToString();
  ASSERT_TRUE(v->Deallocate(*a).ok());
  Result<void*> c = v->Allocate(4 * kMiB);  // the held granules serve it
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(v->GetStats().bytes_reserved, 4 * kMiB);
  ASSERT_TRUE(v->SetMemoryLimit(std::nullopt).ok());
  Result<void*> d = v->Allocate(2 * kMiB);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  for (void* p : {*c, *d}) ASSERT_TRUE(v->Deallocate(p).ok());
}

// Found by the allocator fuzzer: with 4 KiB granules, a request of hundreds
// of GiB under a small limit grew the page table (one entry per granule of
// addresses) to gigabytes before the limit refused it.
TEST(VmmAllocator, ARequestNoLimitCanServeIsRefusedBeforeItsPageTableGrows) {
  HostPhysicalMemoryParams hp;
  hp.granularity = 4096;
  auto m = Host(hp);
  VmmParams p;
  p.memory_limit = kMiB;
  auto v = Vmm(*m, p);
  Result<void*> small = v->Allocate(8192);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  const std::uint64_t huge = std::uint64_t{300} << 30;
  Result<void*> a = v->Allocate(huge);
  EXPECT_EQ(a.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(a.status().message().find("more than the limit of 1.0 MiB allows"), std::string::npos)
      << a.status().message();
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 256 * 1024) << "KiB of resident memory grown";  // a 3.6 GiB table before
  // A limit lowered below what is held still lets the held granules serve.
  ASSERT_TRUE(v->Deallocate(*small).ok());
  Result<void*> half = v->Allocate(kMiB / 2);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  ASSERT_TRUE(v->Deallocate(*half).ok());
  ASSERT_TRUE(v->SetMemoryLimit(8192).ok());
  Result<void*> again = v->Allocate(kMiB / 2);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(v->Allocate(kMiB).status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(v->Deallocate(*again).ok());
}

TEST(VmmAllocator, DoubleFreesAndForeignPointersAreErrors) {
  auto m = Host();
  auto v = Vmm(*m);
  Result<void*> a = v->Allocate(1000);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(v->Deallocate(*a).ok());
  EXPECT_EQ(v->Deallocate(*a).code(), StatusCode::kFailedPrecondition);
  int local = 0;
  EXPECT_EQ(v->Deallocate(&local).code(), StatusCode::kNotFound);
  Result<void*> b = v->Allocate(4096);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(v->Deallocate(static_cast<char*>(*b) + 512).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(v->Deallocate(*b).ok());
  EXPECT_EQ(v->GetStats().num_frees, 2u);
  EXPECT_EQ(v->GetStats().bytes_in_use, 0u);
}

TEST(VmmAllocator, ABlockFreedOnOneStreamWaitsForItsEventBeforeAnotherStreamReusesIt) {
  auto m = ManualEventsHost();
  auto v = Vmm(*m);
  const StreamHandle s1 = 1, s2 = 2;
  Result<void*> a = v->AllocateAsync(4096, s1);
  ASSERT_TRUE(a.ok());
  Result<void*> other = v->AllocateAsync(4096, s2);  // a second stream is seen
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(v->DeallocateAsync(*a, s1).ok());
  // The same stream reuses it at once.
  Result<void*> same = v->AllocateAsync(4096, s1);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, *a);
  ASSERT_TRUE(v->DeallocateAsync(*same, s1).ok());
  // Another stream does not, while the free's event is pending...
  Result<void*> before = v->AllocateAsync(4096, s2);
  ASSERT_TRUE(before.ok());
  EXPECT_NE(*before, *a);
  // ...and does once it completed.
  m->CompleteEvents();
  Result<void*> after = v->AllocateAsync(4096, s2);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *a);
  EXPECT_GE(v->counters().events_recorded, 2u);
  for (void* p : {*other, *before, *after}) ASSERT_TRUE(v->DeallocateAsync(p, s2).ok());
}

// record_stream: a block also used on another stream is freed only once
// that stream's work queued at the free is done; until then nothing reuses
// its bytes, not even its own stream, and it counts as in use.
TEST(VmmAllocator, RecordStreamDefersTheFreeUntilTheOtherStreamsWorkIsDone) {
  auto m = ManualEventsHost();
  auto v = Vmm(*m);
  const StreamHandle s1 = 1, s2 = 2;
  Result<void*> a = v->AllocateAsync(4096, s1);
  ASSERT_TRUE(a.ok());
  Fill(*a, 4096, 7);
  ASSERT_TRUE(v->RecordStream(*a, s2).ok());
  ASSERT_TRUE(v->RecordStream(*a, s2).ok());  // twice: one use
  ASSERT_TRUE(v->RecordStream(*a, s1).ok());  // its own stream: nothing
  ASSERT_TRUE(v->DeallocateAsync(*a, s1).ok());
  EXPECT_EQ(v->counters().frees_deferred, 1u);
  EXPECT_EQ(v->GetStats().bytes_in_use, 4096u);
  EXPECT_NE(v->MemoryReport(4).find("record_stream"), std::string::npos) << v->MemoryReport(4);
  // Freed once: a second free, or a record, is an error naming the call.
  const Status again = v->DeallocateAsync(*a, s1);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("free of"), std::string::npos) << again.ToString();
  EXPECT_EQ(v->RecordStream(*a, s2).code(), StatusCode::kFailedPrecondition);
  // Its own stream does not get it back while s2's work is pending.
  Result<void*> b = v->AllocateAsync(4096, s1);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*b, *a);
  Fill(*b, 4096, 9);
  EXPECT_TRUE(Intact(*a, 4096, 7));
  m->CompleteEvents();
  Result<void*> c = v->AllocateAsync(4096, s1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, *a);
  EXPECT_EQ(v->GetStats().bytes_in_use, 8192u);
  EXPECT_EQ(v->MemoryReport(4).find("record_stream"), std::string::npos);
  // A block with no other stream is freed as always: nothing deferred.
  ASSERT_TRUE(v->DeallocateAsync(*b, s1).ok());
  ASSERT_TRUE(v->DeallocateAsync(*c, s1).ok());
  EXPECT_EQ(v->counters().frees_deferred, 1u);
  EXPECT_EQ(v->GetStats().bytes_in_use, 0u);
}

TEST(VmmAllocator, RecordStreamOfAPointerNotLiveIsAnError) {
  auto m = Host();
  auto v = Vmm(*m);
  int local = 0;
  EXPECT_EQ(v->RecordStream(&local, 2).code(), StatusCode::kNotFound);
  EXPECT_EQ(v->RecordStream(nullptr, 2).code(), StatusCode::kInvalidArgument);
  Result<void*> a = v->Allocate(4096);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(v->Owns(*a));
  EXPECT_FALSE(v->Owns(&local));
  EXPECT_EQ(v->RecordStream(static_cast<char*>(*a) + 512, 2).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(v->Deallocate(*a).ok());
}

// Memory held only by frees waiting for other streams is waited for before
// an out-of-memory answer, and a request that does not fit even then fails
// once (counted once).
TEST(VmmAllocator, DeferredFreesAreWaitedForBeforeOutOfMemory) {
  auto m = ManualEventsHost();
  VmmParams p;
  p.memory_limit = 4 * kMiB;
  auto v = Vmm(*m, p);
  Result<void*> a = v->AllocateAsync(2 * kMiB, 1);
  Result<void*> b = v->AllocateAsync(2 * kMiB, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(v->RecordStream(*b, 2).ok());
  ASSERT_TRUE(v->DeallocateAsync(*b, 1).ok());
  const std::uint64_t waits = v->counters().event_waits;
  Result<void*> c = v->AllocateAsync(2 * kMiB, 1);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GT(v->counters().event_waits, waits);
  EXPECT_EQ(v->GetStats().num_failed_allocs, 0u);
  ASSERT_TRUE(v->RecordStream(*c, 2).ok());
  ASSERT_TRUE(v->DeallocateAsync(*c, 1).ok());
  Result<void*> too_big = v->AllocateAsync(4 * kMiB, 1);  // a stays live
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(v->GetStats().num_failed_allocs, 1u);
  EXPECT_EQ(v->GetStats().bytes_in_use, 2 * kMiB);  // the deferred free was done on the way
  ASSERT_TRUE(v->DeallocateAsync(*a, 1).ok());
}

// A deferred free whose own event cannot be recorded when it is finished
// stays deferred (its owner freed it: it must not come back as live, where
// nothing would ever free it) and is finished once events work again.
TEST(VmmAllocator, ADeferredFreeThatCannotBeFinishedIsTriedAgainNotLeaked) {
  auto host = ManualEventsHost();
  RefusingMemory device(*host, 1000);
  auto v = Vmm(device);
  Result<void*> a = v->AllocateAsync(4096, 1);
  Result<void*> other = v->AllocateAsync(4096, 2);  // a second stream: frees record events
  ASSERT_TRUE(a.ok() && other.ok());
  ASSERT_TRUE(v->RecordStream(*a, 2).ok());
  ASSERT_TRUE(v->DeallocateAsync(*a, 1).ok());
  host->CompleteEvents();
  device.set_refuse_events(true);
  Result<void*> refused = v->AllocateAsync(4096, 1);  // finishing the free fails here
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cannot record an event"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(v->DeallocateAsync(*a, 1).code(), StatusCode::kFailedPrecondition);  // still freed
  EXPECT_EQ(v->GetStats().bytes_in_use, 8192u);
  device.set_refuse_events(false);
  Result<void*> b = v->AllocateAsync(4096, 1);  // finishes it: a's bytes come back
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b, *a);
  EXPECT_EQ(v->GetStats().bytes_in_use, 8192u);
  for (void* p : {*b, *other}) ASSERT_TRUE(v->DeallocateAsync(p, 1).ok());
  EXPECT_EQ(v->GetStats().bytes_in_use, 0u);
  ASSERT_TRUE(v->ReleaseCachedMemory().ok());
  EXPECT_EQ(device.held(), 0u);
}

TEST(VmmAllocator, ReleaseCachedMemoryFinishesDeferredFrees) {
  auto m = ManualEventsHost();
  auto v = Vmm(*m);
  Result<void*> a = v->AllocateAsync(3 * kMiB, 1);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(v->RecordStream(*a, 2).ok());
  ASSERT_TRUE(v->DeallocateAsync(*a, 1).ok());
  EXPECT_EQ(v->GetStats().bytes_in_use, 3 * kMiB);
  Result<std::uint64_t> released = v->ReleaseCachedMemory();
  ASSERT_TRUE(released.ok());
  EXPECT_GE(*released, 3 * kMiB);
  EXPECT_EQ(v->GetStats().bytes_in_use, 0u);
  EXPECT_EQ(v->GetStats().bytes_reserved, 0u);
  EXPECT_EQ(m->granules_held(), 0u);
}

// Four threads on two streams, fixed seeds, every block filled with a
// pattern checked on free; with the device on time, never done unless
// waited for (every re-stitch waits: the fence and synchronize paths), and
// 100 steps behind with a fifth thread moving its clock. One free in four
// is of a block also used on the other stream (record_stream): the test
// records its own event there just before the free, and no allocation may
// return bytes of that block while the event is pending (the allocator's
// event, recorded later, completes no earlier; a freed block's pages may be
// unmapped, so the check is on addresses, not contents).
TEST(VmmAllocator, SeededStressFromSeveralThreadsKeepsEveryPattern) {
  for (std::uint64_t lag : {std::uint64_t{0}, std::uint64_t{1} << 40, std::uint64_t{100}}) {
    SCOPED_TRACE(lag);
    HostPhysicalMemoryParams hp;
    hp.event_lag = lag;
    auto m = Host(hp);
    VmmParams p;
    p.memory_limit = 1024 * kMiB;
    auto v = Vmm(*m, p);
    std::atomic<bool> done{false};
    std::thread clock([&] {
      while (lag == 100 && !done.load()) m->AdvanceDevice();
    });
    // Blocks freed while the other stream's work (the test's event) is pending.
    struct InFlight { const char* p; std::uint64_t bytes; EventHandle event; };
    std::mutex in_flight_mutex;
    std::vector<InFlight> in_flight;
    auto check_not_in_flight = [&](const void* block, std::uint64_t bytes) {
      const char* start = static_cast<const char*>(block);
      std::lock_guard<std::mutex> lock(in_flight_mutex);
      for (std::size_t k = 0; k < in_flight.size();) {
        const InFlight& f = in_flight[k];
        // Pending now means pending when the allocation returned.
        const bool completed = m->EventCompleted(f.event);
        ASSERT_TRUE(completed || start + bytes <= f.p || f.p + f.bytes <= start)
            << "bytes handed out while the other stream's work on them was pending";
        if (completed) {
          m->DestroyEvent(f.event);
          in_flight[k] = in_flight.back();
          in_flight.pop_back();
        } else {
          ++k;
        }
      }
    };
    auto worker = [&](std::uint64_t seed, StreamHandle stream) {
      std::mt19937_64 rng(seed);
      struct Live { void* p; std::uint64_t bytes; std::uint8_t pattern; };
      std::vector<Live> live;
      const StreamHandle other = stream == 0 ? 1 : 0;
      for (int i = 0; i < 3000; ++i) {
        if (live.empty() || rng() % 100 < 55) {
          const std::uint64_t kind = rng() % 100;
          const std::uint64_t bytes = kind < 70 ? 1 + rng() % 4096 : kind < 97 ? 1 + rng() % (256 << 10) : 1 + rng() % (4 << 20);
          const std::uint64_t align = std::uint64_t{64} << (rng() % 6);
          Result<void*> a = v->AllocateAsync(bytes, stream, align);
          ASSERT_TRUE(a.ok()) << a.status().ToString();
          ASSERT_EQ(reinterpret_cast<std::uintptr_t>(*a) % align, 0u);
          const auto pattern = static_cast<std::uint8_t>(rng());
          ASSERT_NO_FATAL_FAILURE(check_not_in_flight(*a, bytes));
          Fill(*a, bytes, pattern);
          live.push_back({*a, bytes, pattern});
        } else {
          const std::size_t k = rng() % live.size();
          ASSERT_TRUE(Intact(live[k].p, live[k].bytes, live[k].pattern)) << "block overwritten";
          EventHandle used = 0;
          if (rng() % 4 == 0) {
            ASSERT_TRUE(v->RecordStream(live[k].p, other).ok());
            Result<EventHandle> e = m->RecordEvent(other);
            ASSERT_TRUE(e.ok());
            used = *e;
          }
          ASSERT_TRUE(v->DeallocateAsync(live[k].p, stream).ok());
          if (used != 0) {
            std::lock_guard<std::mutex> lock(in_flight_mutex);
            in_flight.push_back({static_cast<char*>(live[k].p), live[k].bytes, used});
          }
          live[k] = live.back();
          live.pop_back();
        }
      }
      for (const Live& l : live) {
        ASSERT_TRUE(Intact(l.p, l.bytes, l.pattern));
        ASSERT_TRUE(v->DeallocateAsync(l.p, stream).ok());
      }
    };
    std::vector<std::thread> threads;
    for (std::uint64_t t = 0; t < 4; ++t) threads.emplace_back(worker, 1234 + t, StreamHandle(t % 2));
    for (auto& t : threads) t.join();
    done = true;
    clock.join();
    for (const InFlight& f : in_flight) m->DestroyEvent(f.event);
    const VmmAllocator::Counters c = v->counters();  // before the release below waits
    // Only a device that never finishes unless waited for makes the waits
    // certain: 100 steps behind, the clock thread may run them all out
    // before a free or a re-stitch looks (it did under ASan, once in eight).
    const bool never_done = lag == std::uint64_t{1} << 40;
    if (never_done) {
      EXPECT_GT(c.frees_deferred, 0u) << "no free waited for the other stream";
    }
    ASSERT_TRUE(v->ReleaseCachedMemory().ok());  // finishes the frees still waiting
    const AllocatorStats s = v->GetStats();
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_EQ(s.num_allocs, s.num_frees);
    EXPECT_EQ(s.bytes_reserved, m->granules_held() * m->granularity());
    EXPECT_LE(s.peak_bytes_reserved, 1024 * kMiB);
    if (never_done) {
      EXPECT_GT(c.synchronizations + c.event_waits, 0u) << "the wait paths were not taken";
    }
    std::printf("lag %llu: %llu re-stitched, %llu synchronizations, %llu fence waits, %llu frees deferred\n",
                static_cast<unsigned long long>(lag), static_cast<unsigned long long>(c.pages_restitched),
                static_cast<unsigned long long>(c.synchronizations), static_cast<unsigned long long>(c.event_waits),
                static_cast<unsigned long long>(c.frees_deferred));
  }
}

// Sizes near 2^64 (a caller's "as much as possible") are rounded to pages
// without wrapping: a step that large commits the whole reservation (it
// wrapped to a step of 0 and, added to the top, could have committed less
// than a region), and an address space that large is refused naming it.
// An address space of 0 is one page, as over granules (it was refused as
// "cannot reserve 0 bytes ...: Success").
TEST(VirtualMemoryBackend, AnEmptyAddressSpaceIsOnePage) {
  VirtualMemoryBackend none(0, 0);
  Result<void*> a = none.Reserve(100, 64);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  static_cast<char*>(*a)[99] = 1;
  const Result<void*> b = none.Reserve(std::uint64_t{1} << 20, 64);
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find("do not fit in the reserved address space"), std::string::npos)
      << b.status().ToString();
  ASSERT_TRUE(none.Release(*a, 100).ok());
}

TEST(VirtualMemoryBackend, HugeStepsAndSpacesDoNotWrap) {
  const std::uint64_t huge = ~std::uint64_t{0};
  VirtualMemoryBackend whole_steps(std::uint64_t{1} << 30, huge);
  Result<void*> a = whole_steps.Reserve(4096, 64);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Result<void*> b = whole_steps.Reserve(3 * kMiB, 64);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  std::memset(*a, 1, 4096);
  std::memset(*b, 2, 3 * kMiB);
  ASSERT_TRUE(whole_steps.Release(*b, 3 * kMiB).ok());
  EXPECT_EQ(static_cast<unsigned char*>(*a)[4095], 1);  // still committed
  ASSERT_TRUE(whole_steps.Release(*a, 4096).ok());

  VirtualMemoryBackend too_big(huge, 0);
  Result<void*> c = too_big.Reserve(4096, 64);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().find("reserve 0 bytes"), std::string::npos) << c.status().ToString();
  EXPECT_NE(c.status().message().find("1844674407370"), std::string::npos) << c.status().ToString();
}

TEST(VirtualMemoryBackend, CompactBfcGrowsInPlaceOverPhysicalGranules) {
  auto m = Host();
  VirtualMemoryBackend backend(*m);
  BfcAllocator bfc(backend, CompactBfcParams());
  std::vector<void*> live;
  for (int i = 0; i < 20; ++i) {
    Result<void*> a = bfc.Allocate(std::uint64_t(i + 1) * 300000);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    Fill(*a, std::uint64_t(i + 1) * 300000, static_cast<std::uint8_t>(i));
    live.push_back(*a);
  }
  EXPECT_EQ(bfc.num_regions(), 1u);  // every extension coalesced
  EXPECT_EQ(backend.committed(), m->granules_held() * m->granularity());
  EXPECT_GE(backend.committed(), backend.reserved());
  // One handle per extension (a GPU pays per handle), not one per granule.
  EXPECT_LE(backend.counters().handles_created, 20u);
  EXPECT_LT(backend.counters().handles_created, m->granules_held());
  EXPECT_EQ(m->call_counts().create, backend.counters().handles_created);
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(Intact(live[i], std::uint64_t(i + 1) * 300000, static_cast<std::uint8_t>(i)));
    ASSERT_TRUE(bfc.Deallocate(live[i]).ok());
  }
  bfc.ReleaseFreeRegions();
  EXPECT_EQ(m->granules_held(), 0u);
}

// Handles go back whole: a decommit that would split one keeps it mapped,
// and the next decommit below it releases it.
TEST(VirtualMemoryBackend, DecommitReleasesOnlyWholeHandles) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  VirtualMemoryBackend backend(*m, std::uint64_t{1} << 30, 2 * g);  // commit 2 granules ahead
  Result<void*> a = backend.Reserve(g, 64);  // [0, 1g): handle [0, 3g)
  Result<void*> b = backend.Reserve(g, 64);  // [1g, 2g)
  Result<void*> d = backend.Reserve(3 * g, 64);  // [2g, 5g): handle [3g, 7g)
  ASSERT_TRUE(a.ok() && b.ok() && d.ok());
  EXPECT_EQ(backend.committed(), 7 * g);
  EXPECT_EQ(backend.counters().handles_created, 2u);
  std::memset(*d, 0x5a, 3 * g);
  ASSERT_TRUE(backend.Release(*d, 3 * g).ok());  // keep 4g: inside [3g, 7g)
  EXPECT_EQ(backend.committed(), 7 * g);
  EXPECT_EQ(backend.counters().handles_released, 0u);
  std::memset(*b, 0x11, g);  // still mapped and writable
  ASSERT_TRUE(backend.Release(*b, g).ok());  // keep 3g: [3g, 7g) goes
  EXPECT_EQ(backend.committed(), 3 * g);
  EXPECT_EQ(backend.counters().handles_released, 1u);
  EXPECT_EQ(m->granules_held(), 3u);
  ASSERT_TRUE(backend.Release(*a, g).ok());  // keep 2g: [0, 3g) stays
  EXPECT_EQ(m->granules_held(), 3u);
}

// release_granules: a handle per granule, any of which can be given back
// inside a live region and taken again; the rest keep their bytes.
TEST(VirtualMemoryBackend, ReleaseGranulesGivesBackAnyGranuleAndTakesItAgain) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  VirtualMemoryBackend plain(*m);
  EXPECT_EQ(plain.decommit_granularity(), 0u);
  VirtualMemoryBackend backend(*m, std::uint64_t{1} << 30, 0, true);
  EXPECT_EQ(backend.decommit_granularity(), g);
  Result<void*> a = backend.Reserve(5 * g, 64);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  char* const p = static_cast<char*>(*a);
  // Each granule its own pattern.
  const auto fill = [&](int k, int seed) { Fill(p + k * g, g, static_cast<std::uint8_t>(seed)); };
  const auto intact = [&](int k, int seed) { return Intact(p + k * g, g, static_cast<std::uint8_t>(seed)); };
  for (int k = 0; k < 5; ++k) fill(k, k);
  EXPECT_EQ(backend.counters().handles_created, 5u);
  EXPECT_EQ(m->granules_held(), 5u);
  ASSERT_TRUE(backend.Decommit(p + g, 2 * g).ok());  // granules 1 and 2
  EXPECT_EQ(m->granules_held(), 3u);
  EXPECT_EQ(backend.counters().handles_released, 2u);
  EXPECT_TRUE(intact(0, 0) && intact(3, 3) && intact(4, 4));
  ASSERT_TRUE(backend.Recommit(p, 4 * g).ok());  // maps only the two given back
  EXPECT_EQ(m->granules_held(), 5u);
  EXPECT_EQ(backend.counters().handles_created, 7u);
  fill(1, 11);  // writable again
  fill(2, 12);
  EXPECT_TRUE(intact(0, 0) && intact(1, 11) && intact(2, 12) && intact(3, 3) && intact(4, 4));
  // Not whole granules, or not committed: errors that name the range.
  EXPECT_EQ(backend.Decommit(p + 1, g).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(backend.Decommit(p + 1, g).message().find("whole granules"), std::string::npos);
  EXPECT_EQ(backend.Recommit(p + 4 * g, 2 * g).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plain.Decommit(p, g).code(), StatusCode::kUnimplemented);
  ASSERT_TRUE(backend.Release(p, 5 * g).ok());
  EXPECT_EQ(m->granules_held(), 0u);
  // Granules given back inside a region its user then releases, below the
  // step kept committed, are mapped again before that range is handed out.
  VirtualMemoryBackend ahead(*m, std::uint64_t{1} << 30, 8 * g, true);
  Result<void*> c = ahead.Reserve(5 * g, 64);  // commits 13 granules
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(ahead.Decommit(static_cast<char*>(*c) + 3 * g, g).ok());
  ASSERT_TRUE(ahead.Release(*c, 5 * g).ok());  // keeps 8 committed, one of them given back
  EXPECT_EQ(m->granules_held(), 7u);
  Result<void*> d = ahead.Reserve(5 * g, 64);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  Fill(*d, 5 * g, 0x63);
  EXPECT_TRUE(Intact(*d, 5 * g, 0x63));
  EXPECT_EQ(m->granules_held(), 8u);
  ASSERT_TRUE(ahead.Release(*d, 5 * g).ok());
}

// A give-back the device refuses part-way is all or nothing: the range is
// mapped again, so its user, which records it as given back only on
// success, never hands out an unmapped granule.
TEST(VirtualMemoryBackend, AGiveBackRefusedPartWayLeavesTheRangeMapped) {
  auto host = Host();
  RefusingMemory device(*host, 100);
  const std::uint64_t g = device.granularity();
  VirtualMemoryBackend backend(device, std::uint64_t{1} << 30, 0, true);
  Result<void*> a = backend.Reserve(4 * g, 64);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  char* const p = static_cast<char*>(*a);
  device.set_unmaps_left(1);  // the first granule goes, the second is refused
  const Status st = backend.Decommit(p, 3 * g);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("cannot unmap"), std::string::npos) << st.ToString();
  EXPECT_EQ(device.held(), 4u);  // the one released is mapped again
  Fill(p, 4 * g, 7);  // every granule writable
  EXPECT_TRUE(Intact(p, 4 * g, 7));
  device.set_unmaps_left(~std::uint64_t{0});
  ASSERT_TRUE(backend.Release(p, 4 * g).ok());
  EXPECT_EQ(device.held(), 0u);
}

// bfc_compact over physical granules with a handle per granule gives
// granules back as over host pages: the memory held by the device falls.
TEST(VirtualMemoryBackend, CompactBfcGivesGranulesBackOverPhysicalGranules) {
  auto m = Host();
  const std::uint64_t g = m->granularity();
  VirtualMemoryBackend backend(*m, std::uint64_t{1} << 34, 0, true);
  BfcAllocator bfc(backend, CompactBfcParams());
  void* hole1 = *bfc.Allocate(8 * g);
  void* sep1 = *bfc.Allocate(g / 8);
  void* hole2 = *bfc.Allocate(8 * g);
  void* sep2 = *bfc.Allocate(g / 8);
  Fill(sep1, g / 8, 1);
  Fill(sep2, g / 8, 2);
  ASSERT_TRUE(bfc.Deallocate(hole1).ok());
  ASSERT_TRUE(bfc.Deallocate(hole2).ok());
  const std::uint64_t held_before = m->granules_held();
  void* big = *bfc.Allocate(12 * g);  // fits neither hole: their granules go back first
  Fill(big, 12 * g, 3);
  EXPECT_GT(backend.counters().decommits, 0u);
  EXPECT_LT(m->granules_held(), held_before + 12);
  void* again = *bfc.Allocate(8 * g);  // lands on given-back granules: taken again
  Fill(again, 8 * g, 4);
  EXPECT_GT(backend.counters().recommits, 0u);
  EXPECT_TRUE(Intact(sep1, g / 8, 1));
  EXPECT_TRUE(Intact(sep2, g / 8, 2));
  EXPECT_TRUE(Intact(big, 12 * g, 3));
  EXPECT_TRUE(Intact(again, 8 * g, 4));
  for (void* q : {sep1, sep2, big, again}) ASSERT_TRUE(bfc.Deallocate(q).ok());
  bfc.ReleaseFreeRegions();
  EXPECT_EQ(m->granules_held(), 0u);
}

TEST(VirtualMemoryBackend, FallsBackToSingleGranulesWhereALargeHandleIsRefused) {
  auto host = Host();
  RefusingMemory device(*host, 100);
  device.set_max_handle_granules(1);
  const std::uint64_t g = device.granularity();
  VirtualMemoryBackend backend(device);
  Result<void*> a = backend.Reserve(3 * g, 64);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  std::memset(*a, 0x33, 3 * g);
  EXPECT_EQ(backend.counters().handles_created, 3u);
  EXPECT_EQ(device.held(), 3u);
  ASSERT_TRUE(backend.Release(*a, 3 * g).ok());
  EXPECT_EQ(device.held(), 0u);
  EXPECT_EQ(backend.counters().handles_released, 3u);
  // A refused single granule is an error, and nothing is committed.
  RefusingMemory full(*host, 1);
  VirtualMemoryBackend small(full);
  Result<void*> b = small.Reserve(g, 64);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(small.Reserve(g, 64).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(small.committed(), g);
  ASSERT_TRUE(small.Release(*b, g).ok());
}

TEST(GzipInput, TracesAndProblemsAreReadCompressed) {
  const std::string dir = ::testing::TempDir();
  auto write_gz = [](const std::string& path, const std::string& text) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    gzclose(f);
  };
  const std::string trace = dir + "/tiny_trace.csv.gz";
  write_gz(trace,
           "Thread,Time,Action,Pointer,Size,Stream\n0,1,allocate,0x10,100,0\n0,2,allocate,0x20,300,0\n"
           "0,3,free,0x10,100,0\n0,4,free,0x20,300,0\n");
  Result<Trace> t = LoadTrace(trace);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->events.size(), 4u);
  Result<Problem> as_problem = LoadProblem(trace);
  ASSERT_TRUE(as_problem.ok()) << as_problem.status().ToString();
  EXPECT_EQ(as_problem->buffers.size(), 2u);
  const std::string csv = dir + "/tiny_problem.csv.gz";
  write_gz(csv, "id,lower,upper,size\na,0,2,64\nb,1,3,32\n");
  Result<Problem> p = LoadProblem(csv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->buffers.size(), 2u);
}

// A .gz cut short or damaged is an error naming the file and zlib's reason,
// even where the cut falls on a line boundary (so the reader alone would
// accept the shorter input).
TEST(GzipInput, TruncatedOrCorruptDataIsAnErrorNamingTheFile) {
  const std::string dir = ::testing::TempDir();
  std::string text = "id,lower,upper,size\n";
  for (int i = 0; i < 20000; ++i) {
    char line[64];
    std::snprintf(line, sizeof line, "b%d,%d,%d,64\n", i, i, i + 3);
    text += line;
  }
  const std::string whole = dir + "/whole.csv.gz";
  {
    gzFile f = gzopen(whole.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    gzclose(f);
  }
  std::ifstream in(whole, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 100u);
  ASSERT_TRUE(LoadProblem(whole).ok());
  auto write = [&](const std::string& name, const std::string& data) {
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  };
  // Without the 8-byte trailer (CRC and length): every line decompresses.
  const std::string no_trailer = write("no_trailer.csv.gz", bytes.substr(0, bytes.size() - 8));
  for (const std::string& path : {no_trailer, write("half.csv.gz", bytes.substr(0, bytes.size() / 2))}) {
    Result<Problem> p = LoadProblem(path);
    ASSERT_FALSE(p.ok()) << path;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(path), std::string::npos) << p.status().message();
    EXPECT_NE(p.status().message().find("truncated gzip"), std::string::npos) << p.status().message();
    Result<Trace> t = LoadTrace(path);
    EXPECT_FALSE(t.ok());
  }
  std::string damaged = bytes;
  for (std::size_t i = 20; i < 60; ++i) damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
  Result<Problem> p = LoadProblem(write("damaged.csv.gz", damaged));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("gzip"), std::string::npos) << p.status().message();
}

// The scenario the GPU test runs, in granules of the memory under test:
// 200 live blocks of growing sizes (about 660 granules in all) under a limit
// of 1,024, a request above the limit refused, everything freed, a large
// block, then empty_cache, then bfc_compact growing in place. The host runs
// it too, at the GPU's 2 MiB granules, so CI checks its arithmetic (the
// first GPU run found a limit below what the blocks needed).
void DeviceScenario(PhysicalMemory& memory) {
  const std::uint64_t g = memory.granularity();
  Result<EventHandle> e = memory.RecordEvent(0);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_TRUE(memory.WaitForEvent(*e).ok());
  EXPECT_TRUE(memory.EventCompleted(*e));
  memory.DestroyEvent(*e);
  VmmParams p;
  p.memory_limit = 1024 * g;
  auto v = Vmm(memory, p);
  std::vector<void*> live;
  for (std::uint64_t i = 0; i < 200; ++i) {
    Result<void*> a = v->AllocateAsync(1000 + i * (g / 30), 0);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    live.push_back(*a);
  }
  EXPECT_LE(v->GetStats().bytes_reserved, 700 * g);
  Status oom = v->Allocate(2048 * g).status();
  EXPECT_EQ(oom.code(), StatusCode::kResourceExhausted) << oom.ToString();
  for (void* q : live) ASSERT_TRUE(v->DeallocateAsync(q, 0).ok());
  Result<void*> big = v->Allocate(32 * g);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  ASSERT_TRUE(v->Deallocate(*big).ok());
  Result<std::uint64_t> released = v->ReleaseCachedMemory();
  ASSERT_TRUE(released.ok()) << released.status().ToString();
  EXPECT_GT(*released, 0u);
  EXPECT_EQ(v->GetStats().bytes_reserved, 0u);
  // bfc_compact grows in place over the same granules.
  VirtualMemoryBackend backend(memory);
  BfcAllocator bfc(backend, CompactBfcParams());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(bfc.Allocate(std::uint64_t(i + 1) << 20).ok());
  EXPECT_EQ(bfc.num_regions(), 1u);
}

TEST(HostPhysicalMemory, TheDeviceScenarioAtTwoMiBGranules) {
  auto host = Host();  // 2 MiB granules, as on NVIDIA GPUs
  ASSERT_EQ(host->granularity(), 2 * kMiB);
  DeviceScenario(*host);
}

// On a GPU: the vmm allocator over CUDA physical memory. Skipped with the
// reason where the build has no CUDA or the machine no device.
TEST(CudaPhysicalMemory, VmmOnTheDevice) {
  Result<std::unique_ptr<PhysicalMemory>> gpu = MakeCudaPhysicalMemory(0);
  if (!CudaPhysicalMemoryCompiled()) {
    ASSERT_EQ(gpu.status().code(), StatusCode::kUnimplemented);
    GTEST_SKIP() << gpu.status().message();
  }
  if (!gpu.ok()) {
    ASSERT_EQ(gpu.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(gpu.status().message().find("no device"), std::string::npos);
    GTEST_SKIP() << gpu.status().message();
  }
  EXPECT_FALSE((*gpu)->host_accessible());
  Result<bool> capturing = (*gpu)->StreamCapturing(0);  // the legacy default stream never captures
  ASSERT_TRUE(capturing.ok()) << capturing.status().ToString();
  EXPECT_FALSE(*capturing);
  DeviceScenario(**gpu);
}

// Physical memory with nothing behind it: addresses reserved inaccessible,
// granules that are only numbers, maps that do nothing. The vmm policy
// runs on it as on a device (the test never touches a block), so page
// tables of millions of pages cost no memory.
class UnbackedMemory final : public PhysicalMemory {
 public:
  std::uint64_t granularity() const override { return 4096; }
  bool host_accessible() const override { return false; }
  std::string_view name() const override { return "unbacked"; }
  Result<void*> ReserveAddressRange(std::uint64_t bytes) override {
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return ResourceExhausted("no addresses (test)");
    return p;
  }
  Status FreeAddressRange(void* base, std::uint64_t bytes) override {
    munmap(base, bytes);
    return Status::Ok();
  }
  Status CreateGranules(std::size_t count, std::vector<GranuleHandle>& out, std::uint64_t n = 1) override {
    for (std::size_t i = 0; i < count; ++i) out.push_back(++next_);
    held_ += count * n;
    return Status::Ok();
  }
  Status ReleaseGranule(GranuleHandle, std::uint64_t n = 1) override {
    held_ -= n;
    return Status::Ok();
  }
  Status Map(void*, std::span<const GranuleHandle>, std::uint64_t = 1) override { return Status::Ok(); }
  Status Unmap(void*, std::size_t, std::uint64_t = 1) override { return Status::Ok(); }
  Status Synchronize() override { return Status::Ok(); }
  Result<EventHandle> RecordEvent(StreamHandle) override { return ++next_; }
  bool EventCompleted(EventHandle) override { return true; }
  Status WaitForEvent(EventHandle) override { return Status::Ok(); }
  void DestroyEvent(EventHandle) override {}
  std::uint64_t held() const { return held_; }

 private:
  std::uint64_t next_ = 0;
  std::uint64_t held_ = 0;
};

// vmm's page table grows with the heap (by realloc, moved rather than
// copied where it is large): as the top goes to 1 GiB and then 3 GiB of
// 4 KiB granules (786,432 pages) every page keeps what it knew, so the
// cached pages of freed blocks serve a new one without a map call.
TEST(VmmAllocator, APageTableOfHundredsOfThousandsOfPagesGrowsAndKeepsItsPages) {
  UnbackedMemory m;
  VmmParams p;
  p.address_space_bytes = std::uint64_t{8} << 30;
  auto v = Vmm(m, p);
  constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
  Result<void*> a = v->Allocate(kGiB);      // a table of 262,144 pages
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Result<void*> b = v->Allocate(2 * kGiB);  // grown to 786,432
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(static_cast<char*>(*b) - static_cast<char*>(*a), static_cast<std::ptrdiff_t>(kGiB));
  EXPECT_EQ(m.held(), 3 * kGiB / 4096);
  EXPECT_EQ(v->GetStats().bytes_reserved, 3 * kGiB);
  ASSERT_TRUE(v->Deallocate(*a).ok());
  ASSERT_TRUE(v->Deallocate(*b).ok());
  const auto before = v->counters();
  Result<void*> c = v->Allocate(3 * kGiB);  // on the cached pages of both
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, *a);
  EXPECT_EQ(v->counters().map_calls, before.map_calls);
  EXPECT_EQ(v->counters().granules_created, before.granules_created);
  EXPECT_EQ(m.held(), 3 * kGiB / 4096);
  ASSERT_TRUE(v->Deallocate(*c).ok());
  Result<std::uint64_t> released = v->ReleaseCachedMemory();
  ASSERT_TRUE(released.ok()) << released.status().ToString();
  EXPECT_EQ(*released, 3 * kGiB);
  EXPECT_EQ(m.held(), 0u);
}

}  // namespace
}  // namespace tensormem
