// SPDX-License-Identifier: Apache-2.0
// Body of the allocator fuzzer (and of its seeded replay in allocators_test):
// the allocators driven by arbitrary bytes. The first bytes pick an
// allocator and its parameters (Create must refuse bad ones with an error
// naming the field, or give a working allocator); the rest is a sequence of
// allocations (any size, any alignment), frees, and frees of pointers that
// are not live (freed already, inside a block, foreign). Every block is
// aligned, overlaps no live block and keeps its first and last byte until
// freed; every refused allocation is out of memory or a bad argument, with
// a message; a free of what is not live is an error that changes nothing;
// giving cached memory back (bfc's free regions, vmm's cache, the pool's
// free blocks) keeps the live blocks; at the end nothing is in use. Memory stays bounded: each allocator sits
// under a 256 MiB cap (a capped backend, a limit, or a limiting adaptor).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "reader_fuzz_common.h"
#include "tensormem/allocators.h"

namespace tensormem::fuzz {

struct FuzzBytes {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t U8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::uint64_t U64(int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = v << 8 | U8();
    return v;
  }
  // A size spread over every scale: 0, small, up to 2^(8 * 8) - 1.
  std::uint64_t Size() {
    const std::uint8_t k = U8();
    return U64(1 + k % 8) >> (k / 8 % 8) * 8;
  }
};

constexpr std::uint64_t kCap = std::uint64_t{256} << 20;

struct AllocatorUnderTest {
  std::unique_ptr<HostPhysicalMemory> physical;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<CappedBackend> capped;
  std::unique_ptr<MemoryResource> below;  // under an adaptor
  std::unique_ptr<MemoryResource> resource;
  bool detects_bad_frees = true;
};

// Builds the allocator the bytes pick; false when its parameters were
// refused (which must be with a message).
inline bool Build(FuzzBytes& in, AllocatorUnderTest& s) {
  auto refused = [](const Status& st) {
    Check(!st.message().empty(), "a refused parameter is named");
    Check(st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kFailedPrecondition ||
                    st.code() == StatusCode::kResourceExhausted,
                "parameters are refused as bad arguments (or the system's refusal)");
    return false;
  };
  switch (in.U8() % 6) {
    case 0:
    case 1: {  // bfc over a capped host backend, or over virtual memory (bfc_compact)
      BfcParams p;
      p.memory_limit = in.Size();
      p.growth = static_cast<BfcGrowth>(in.U8() % 4);  // 3 is no growth policy
      p.initial_region_bytes = in.Size();
      p.max_internal_fragmentation_bytes = in.Size();
      const std::uint8_t flags = in.U8();
      p.coalesce_regions = flags & 1;
      p.garbage_collection = flags & 2;
      p.retry_smaller_regions = flags & 4;
      if (flags & 16) {  // granules given back and taken again (bfc_compact's policy)
        p.release_free_granules = true;
        p.held_slack = in.U8() / 64.0;
        p.fit_candidates = in.U8() % 24;  // 0 must be refused
      }
      if (flags & 32) {  // virtual memory over host granules, a handle per granule or per commit
        HostPhysicalMemoryParams hp;
        hp.granularity = std::uint64_t{1} << (12 + in.U8() % 10);
        Result<std::unique_ptr<HostPhysicalMemory>> m = HostPhysicalMemory::Create(hp);
        if (!m.ok()) return refused(m.status());
        s.physical = std::move(*m);
        s.backend = std::make_unique<VirtualMemoryBackend>(*s.physical, std::uint64_t{1} << (20 + in.U8() % 17),
                                                           in.Size(), (flags & 64) != 0);
        s.capped = std::make_unique<CappedBackend>(*s.backend, kCap);
      } else if (flags & 8) {
        s.backend = std::make_unique<VirtualMemoryBackend>(std::uint64_t{1} << (20 + in.U8() % 17), in.Size());
        s.capped = std::make_unique<CappedBackend>(*s.backend, kCap);
      } else {
        s.capped = std::make_unique<CappedBackend>(HostBackend(), kCap);
      }
      Result<std::unique_ptr<BfcAllocator>> a = BfcAllocator::Create(*s.capped, p);
      if (!a.ok()) return refused(a.status());
      s.resource = std::move(*a);
      return true;
    }
    case 2: {  // buffer pool over a capped host backend
      BufferPoolParams p;
      p.split_granularity = in.Size();
      p.defer_strategy = static_cast<OffsetsStrategy>(in.U8() % 16);
      s.capped = std::make_unique<CappedBackend>(HostBackend(), kCap);
      Result<std::unique_ptr<BufferPool>> a = BufferPool::Create(*s.capped, p);
      if (!a.ok()) return refused(a.status());
      s.resource = std::move(*a);
      return true;
    }
    case 3: {  // vmm over host granules
      HostPhysicalMemoryParams hp;
      hp.granularity = std::uint64_t{1} << (in.U8() % 32);
      Result<std::unique_ptr<HostPhysicalMemory>> m = HostPhysicalMemory::Create(hp);
      if (!m.ok()) return refused(m.status());
      s.physical = std::move(*m);
      VmmParams p;
      p.memory_limit = in.Size() % (kCap + 1);
      p.small_request_bytes = in.Size();
      p.block_rounding_bytes = in.Size();
      p.address_space_bytes = in.Size();
      const std::uint8_t flags = in.U8();  // one byte: the stored inputs decode as before
      p.restitch_before_growing = flags & 1;
      p.protect_refaulted = flags & 2;
      p.growth_slack = static_cast<double>(static_cast<std::int8_t>(in.U8())) / 64.0;
      p.grow_ahead = p.growth_slack;  // the same byte: the stored inputs decode as before
      p.max_handle_granules = in.Size();
      Result<std::unique_ptr<VmmAllocator>> a = VmmAllocator::Create(*s.physical, p);
      if (!a.ok()) return refused(a.status());
      s.resource = std::move(*a);
      return true;
    }
    case 4: {  // the system allocator under a limiting adaptor (malloc never sees a huge size)
      SystemAllocatorParams p;
      p.track_pointers = in.U8() & 1;
      s.detects_bad_frees = p.track_pointers;
      Result<std::unique_ptr<SystemAllocator>> a = SystemAllocator::Create(p);
      if (!a.ok()) return refused(a.status());
      s.below = std::move(*a);
      s.resource = std::make_unique<LimitingAdaptor>(*s.below, in.Size() % (kCap + 1));
      return true;
    }
    default: {  // statistics over bfc
      s.capped = std::make_unique<CappedBackend>(HostBackend(), kCap);
      Result<std::unique_ptr<BfcAllocator>> a = BfcAllocator::Create(*s.capped, BfcParams{});
      Check(a.ok(), "bfc starts with its defaults");
      s.below = std::move(*a);
      s.resource = std::make_unique<StatisticsAdaptor>(*s.below);
      return true;
    }
  }
}

struct LiveBlock {
  std::uint64_t bytes;
  std::uint8_t tag;
};

// Checks an allocation's answer against the live blocks (any type with
// `bytes`): refused only for want of memory or a bad argument, with a
// message; else aligned as asked and clear of every live block. Returns the
// block's address, or nullopt when refused.
template <typename Live>
std::optional<std::uintptr_t> CheckedBlock(const Result<void*>& a, std::uint64_t used, std::uint64_t alignment,
                                           const std::map<std::uintptr_t, Live>& live) {
  if (!a.ok()) {
    Check(!a.status().message().empty(), "a refused allocation says why");
    Check(a.status().code() == StatusCode::kResourceExhausted ||
              a.status().code() == StatusCode::kInvalidArgument,
          "an allocation is refused only for want of memory or a bad argument");
    return std::nullopt;
  }
  const auto p = reinterpret_cast<std::uintptr_t>(*a);
  Check(p % alignment == 0, "blocks are aligned as asked");
  auto next = live.lower_bound(p);
  Check(next == live.end() || p + used <= next->first, "blocks do not overlap the next live one");
  Check(next == live.begin() || std::prev(next)->first + std::prev(next)->second.bytes <= p,
        "blocks do not overlap the previous live one");
  return p;
}

// A pointer that is not live, picked by `which`: 0 one freed before (when
// it was not handed out again), 1 one inside a live block, else `foreign`.
template <typename Live>
void* NotLivePointer(std::uint8_t which, FuzzBytes& in, const std::map<std::uintptr_t, Live>& live,
                     const std::vector<std::uintptr_t>& freed, void* foreign) {
  if (which == 0 && !freed.empty()) {
    const std::uintptr_t f = freed[in.U8() % freed.size()];
    if (live.count(f) == 0) return reinterpret_cast<void*>(f);
  } else if (which == 1 && !live.empty() && live.begin()->second.bytes > 1) {
    return reinterpret_cast<void*>(live.begin()->first + 1);
  }
  return foreign;
}

// A call on what is not live (`what`) is an error with a message and changes nothing.
inline void CheckRefused(const Status& st, std::uint64_t in_use_before, std::uint64_t in_use_after,
                         const char* what) {
  Check(!st.ok() && !st.message().empty(), what);
  Check(in_use_after == in_use_before, "and it changes nothing");
}

// A block's first and last byte carry its tag until it is freed.
inline void TagBlock(std::uintptr_t p, std::uint64_t used, std::uint8_t tag) {
  auto* b = reinterpret_cast<std::uint8_t*>(p);
  b[0] = b[used - 1] = tag;
}
template <typename Live>
bool Intact(std::uintptr_t p, const Live& l) {
  const auto* b = reinterpret_cast<const std::uint8_t*>(p);
  return b[0] == l.tag && b[l.bytes - 1] == l.tag;
}

// Returns the allocations that succeeded (0 also when the parameters were refused).
inline int FuzzAllocatorOne(const std::uint8_t* data, std::size_t size) {
  FuzzBytes in{data, size};
  AllocatorUnderTest s;
  if (!Build(in, s)) return 0;
  int allocations = 0;
  MemoryResource& r = *s.resource;
  std::map<std::uintptr_t, LiveBlock> live;
  std::vector<std::uintptr_t> freed;
  int local = 0;
  std::uint8_t tag = 0;
  for (int step = 0; step < 200 && in.n > 0; ++step) {
    const std::uint8_t op = in.U8();
    if (op % 4 < 2 || live.empty()) {
      std::uint64_t bytes = in.Size();
      if (op & 0x80) bytes %= 1 << 20;  // mostly sizes that fit
      const std::uint64_t alignment = std::uint64_t{1} << (in.U8() % 24);
      const std::uint64_t used = bytes == 0 ? 1 : bytes;
      const std::optional<std::uintptr_t> p = CheckedBlock(r.Allocate(bytes, alignment), used, alignment, live);
      if (!p) continue;
      TagBlock(*p, used, ++tag);
      live[*p] = LiveBlock{used, tag};
      ++allocations;
    } else if (op % 8 == 7) {
      // Housekeeping: each allocator's way of giving memory back, and its
      // report; the live blocks keep their bytes.
      if (auto* bfc = dynamic_cast<BfcAllocator*>(&r)) {
        bfc->ReleaseFreeRegions();
        Check(!bfc->MemoryReport(in.U8() % 8).empty(), "bfc reports");
      } else if (auto* vmm = dynamic_cast<VmmAllocator*>(&r)) {
        Check(vmm->ReleaseCachedMemory().ok(), "vmm gives its cache back");
        Check(!vmm->MemoryReport(in.U8() % 8).empty(), "vmm reports");
      } else if (auto* pool = dynamic_cast<BufferPool*>(&r)) {
        Check(pool->Release(PoolRelease::kOnlyFree).ok(), "the pool gives its free blocks back");
      }
      for (const auto& [p, l] : live) Check(Intact(p, l), "giving memory back keeps the live blocks");
    } else if (op % 4 == 2) {
      auto it = live.begin();
      std::advance(it, in.U8() % live.size());
      Check(Intact(it->first, it->second), "a block keeps its bytes until it is freed");
      Check(r.Deallocate(reinterpret_cast<void*>(it->first)).ok(), "a live block frees");
      freed.push_back(it->first);
      live.erase(it);
    } else if (s.detects_bad_frees) {
      void* bad = NotLivePointer(in.U8() % 3, in, live, freed, &local);
      const std::uint64_t in_use = r.GetStats().bytes_in_use;
      const Status st = r.Deallocate(bad);
      CheckRefused(st, in_use, r.GetStats().bytes_in_use, "a free of what is not live is an error");
    }
  }
  for (const auto& [p, l] : live) {
    Check(Intact(p, l), "a block keeps its bytes until it is freed");
    Check(r.Deallocate(reinterpret_cast<void*>(p)).ok(), "a live block frees at the end");
  }
  Check(r.GetStats().bytes_in_use == 0, "nothing is left in use");
  return allocations;
}

}  // namespace tensormem::fuzz
