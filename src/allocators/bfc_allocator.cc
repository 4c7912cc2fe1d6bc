// SPDX-License-Identifier: Apache-2.0
// The BFC allocator (TensorFlow's bfc_allocator.cc, re-implemented from its
// documented behaviour; see bfc_allocator.h for the rules).
//
// Layout: chunks live in one vector addressed by handles (freed handles are
// recycled); a hash map from every chunk start to its handle finds a
// pointer's chunk in O(1) (the few regions are searched, by binary search,
// only to word the error for a pointer that is no chunk start). A bin is an ordered
// set of (size, address) keys of its free chunks; its nodes come from a
// free list of fixed-size nodes, since the allocator holds its mutex for
// every set operation anyway.
#include "tensormem/allocators/bfc_allocator.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "allocators/adaptive_mutex.h"
#include "allocators/node_arena.h"
#include "allocators/pointer_map.h"
#include "core/checked_math.h"
#include "core/parse_name.h"

namespace tensormem {
namespace {

using internal::NodeAllocator;
using internal::NodeArena;

using ChunkHandle = std::uint32_t;
constexpr ChunkHandle kInvalidChunk = ~ChunkHandle{0};
constexpr std::uint64_t kMinSize = BfcAllocator::kMinAllocationSize;
constexpr int kMinBits = 8;
static_assert(std::uint64_t{1} << kMinBits == kMinSize);

struct Chunk {
  char* ptr = nullptr;
  std::uint64_t size = 0;       // a multiple of 256
  std::uint64_t requested = 0;  // what the caller asked for (in use only)
  ChunkHandle prev = kInvalidChunk;  // address-ordered neighbours in the region
  ChunkHandle next = kInvalidChunk;
  bool in_use = false;
  bool in_bin = false;
};

struct FreeKey {
  std::uint64_t size;
  std::uintptr_t address;
  ChunkHandle handle;
};
struct FreeKeyLess {
  bool operator()(const FreeKey& a, const FreeKey& b) const {
    return a.size != b.size ? a.size < b.size : a.address < b.address;
  }
};

using FreeSet = std::set<FreeKey, FreeKeyLess, NodeAllocator<FreeKey>>;

struct Region {
  char* ptr = nullptr;
  std::uint64_t bytes = 0;
  ChunkHandle last = kInvalidChunk;  // the chunk at the region's end

  char* end() const { return ptr + bytes; }
};

}  // namespace

struct BfcAllocator::State {
  Backend& backend;
  BfcParams params;
  mutable internal::AdaptiveMutex mutex;

  std::vector<Chunk> chunks;
  std::vector<ChunkHandle> free_handles;
  NodeArena node_arena;
  std::vector<FreeSet> bins;
  std::vector<Region> regions;  // sorted by address
  // The chunk that starts at each chunk start, live or free. A hash map of
  // the chunks rather than TensorFlow's table of one entry per 256 bytes of
  // region: that table's first touches were a quarter of a cold pass's time
  // on a serving trace, and its pages up to 1/64 of the memory reserved.
  internal::PointerMap<ChunkHandle> chunk_at;

  Status valid;                         // Validate(params)
  std::uint64_t curr_region_bytes = 0;  // the size of the next region (growth)
  std::string backend_refusal;          // why the backend last refused a region
  std::uint64_t total_region_bytes = 0;
  std::uint64_t free_bytes = 0;
  AllocatorStats stats;
  // release_free_granules: the granules given back, start address -> bytes
  // (granule multiples, disjoint, each inside one free chunk).
  std::map<std::uintptr_t, std::uint64_t> decommitted;
  std::uint64_t decommitted_bytes = 0;

  State(Backend& b, const BfcParams& p) : backend(b), params(p), valid(Validate(p)) {
    bins.reserve(kNumBins);
    for (int i = 0; i < kNumBins; ++i) bins.emplace_back(NodeAllocator<FreeKey>(&node_arena));
    switch (params.growth) {
      case BfcGrowth::kDoubling:
      case BfcGrowth::kOnDemand:
        curr_region_bytes = std::max(
            kMinSize, RoundedBytes(std::min({params.memory_limit, params.initial_region_bytes,
                                              std::uint64_t{1} << 62})));
        break;
      case BfcGrowth::kReserveAll:
        curr_region_bytes = RoundDown(params.memory_limit);
        break;
    }
    if (params.memory_limit != std::numeric_limits<std::uint64_t>::max())
      stats.bytes_limit = params.memory_limit;
  }

  static std::uint64_t RoundDown(std::uint64_t b) { return b / kMinSize * kMinSize; }

  Chunk& C(ChunkHandle h) { return chunks[h]; }
  const Chunk& C(ChunkHandle h) const { return chunks[h]; }

  ChunkHandle NewChunk() {
    if (!free_handles.empty()) {
      const ChunkHandle h = free_handles.back();
      free_handles.pop_back();
      chunks[h] = Chunk{};
      return h;
    }
    chunks.emplace_back();
    return static_cast<ChunkHandle>(chunks.size() - 1);
  }
  void DeleteChunk(ChunkHandle h) {
    chunk_at.Erase(C(h).ptr);
    free_handles.push_back(h);
  }
  // The chunk starting at `p`; kInvalidChunk when none does.
  ChunkHandle ChunkAt(const void* p) const {
    const ChunkHandle* h = chunk_at.Find(p);
    return h == nullptr ? kInvalidChunk : *h;
  }
  ChunkHandle First(const Region& r) const { return ChunkAt(r.ptr); }

  Region* RegionFor(const void* p) {
    auto it = std::upper_bound(regions.begin(), regions.end(), p,
                               [](const void* q, const Region& r) { return q < r.end(); });
    if (it == regions.end() || p < it->ptr) return nullptr;
    return &*it;
  }
  const Region* RegionFor(const void* p) const { return const_cast<State*>(this)->RegionFor(p); }
  void SetHandle(const void* p, ChunkHandle h) { chunk_at.Insert(p, h); }

  void InsertFree(ChunkHandle h) {
    Chunk& c = C(h);
    assert(!c.in_use && !c.in_bin);
    bins[static_cast<std::size_t>(BinForSize(c.size))].insert(
        FreeKey{c.size, reinterpret_cast<std::uintptr_t>(c.ptr), h});
    c.in_bin = true;
    free_bytes += c.size;
  }
  void RemoveFree(ChunkHandle h) {
    Chunk& c = C(h);
    assert(c.in_bin);
    bins[static_cast<std::size_t>(BinForSize(c.size))].erase(
        FreeKey{c.size, reinterpret_cast<std::uintptr_t>(c.ptr), h});
    c.in_bin = false;
    free_bytes -= c.size;
  }

  // Splits h into [h: bytes][new: rest]; the new chunk goes to its bin.
  void SplitChunk(ChunkHandle h, std::uint64_t bytes) {
    const ChunkHandle nh = NewChunk();  // may reallocate `chunks`: index after
    Chunk& c = C(h);
    Chunk& n = C(nh);
    n.ptr = c.ptr + bytes;
    n.size = c.size - bytes;
    c.size = bytes;
    n.prev = h;
    n.next = c.next;
    if (c.next != kInvalidChunk)
      C(c.next).prev = nh;
    else
      RegionFor(n.ptr)->last = nh;
    c.next = nh;
    SetHandle(n.ptr, nh);
    InsertFree(nh);
  }

  // h1 absorbs its next neighbour h2.
  void Merge(ChunkHandle h1, ChunkHandle h2) {
    Chunk& c1 = C(h1);
    Chunk& c2 = C(h2);
    assert(!c1.in_use && !c2.in_use && c1.next == h2);
    c1.next = c2.next;
    if (c2.next != kInvalidChunk)
      C(c2.next).prev = h1;
    else
      RegionFor(c1.ptr)->last = h1;
    c1.size += c2.size;
    DeleteChunk(h2);
  }

  // Merges h with its free neighbours; returns the chunk that remains.
  ChunkHandle TryToCoalesce(ChunkHandle h) {
    ChunkHandle result = h;
    const ChunkHandle next = C(h).next;
    if (next != kInvalidChunk && !C(next).in_use) {
      RemoveFree(next);
      Merge(h, next);
    }
    const ChunkHandle prev = C(h).prev;
    if (prev != kInvalidChunk && !C(prev).in_use) {
      RemoveFree(prev);
      Merge(prev, h);
      result = prev;
    }
    return result;
  }

  bool Coalescing() const { return params.coalesce_regions && backend.contiguous(); }

  std::uint64_t SplitThreshold() const {
    return std::max(params.max_internal_fragmentation_bytes, kMinSize);
  }

  // Marks a free chunk (already out of its bin) in use for `bytes` rounded
  // to `rounded`, splitting off the tail by TensorFlow's rule.
  void* TakeChunk(ChunkHandle h, std::uint64_t rounded, std::uint64_t bytes) {
    if (C(h).size >= rounded * 2 || C(h).size - rounded >= SplitThreshold()) SplitChunk(h, rounded);
    if (!RecommitFor(h)) {  // its memory cannot be had again: the chunk stays free
      InsertFree(TryToCoalesce(h));
      return nullptr;
    }
    Chunk& c = C(h);
    c.in_use = true;
    c.requested = bytes;
    ++stats.num_allocs;
    stats.bytes_in_use += c.size;
    stats.peak_bytes_in_use = std::max(stats.peak_bytes_in_use, stats.bytes_in_use);
    stats.largest_alloc_size = std::max(stats.largest_alloc_size, c.size);
    return c.ptr;
  }

  // The smallest free chunk >= rounded (lowest address among equals), from
  // the request's bin upward; null when none. Once granules have been given
  // back (release_free_granules), among the first fit_candidates chunks in
  // that order, the one whose granules under the block (at the chunk's
  // start) were given back least; ties go to the best fit. Each granule
  // taken again is memory held again and a call to the backend, so a block
  // lands on memory still held where a chunk nearly as small has some.
  // (At the chunk's high end too, as vmm places: fewer calls, but a large
  // hole split for a small block held more on small heaps.)
  void* FindChunkPtr(std::uint64_t rounded, std::uint64_t bytes) {
    const bool weigh = !decommitted.empty();  // implies a granule
    const std::uint64_t g = Granule();
    const std::uint32_t most = weigh ? params.fit_candidates : 1;
    ChunkHandle best = kInvalidChunk;
    std::uint64_t best_cost = ~std::uint64_t{0};
    std::uint32_t looked = 0;
    for (int b = BinForSize(rounded); b < kNumBins && looked < most && best_cost > 0; ++b) {
      const FreeSet& set = bins[static_cast<std::size_t>(b)];
      for (auto it = set.lower_bound(FreeKey{rounded, 0, 0}); it != set.end() && looked < most && best_cost > 0;
           ++it, ++looked) {
        const std::uint64_t cost =
            weigh ? DecommittedIn(it->address / g * g, (it->address + rounded + g - 1) / g * g) : 0;
        if (cost < best_cost) {
          best = it->handle;
          best_cost = cost;
        }
      }
    }
    if (best == kInvalidChunk) return nullptr;
    RemoveFree(best);
    return TakeChunk(best, rounded, bytes);
  }

  // For alignments above 256: the first chunk in best-fit order whose
  // aligned start still leaves `rounded` bytes; the front padding stays
  // free as its own chunk.
  void* FindAlignedChunkPtr(std::uint64_t rounded, std::uint64_t bytes, std::uint64_t alignment) {
    for (int b = BinForSize(rounded); b < kNumBins; ++b) {
      FreeSet& set = bins[static_cast<std::size_t>(b)];
      for (auto it = set.lower_bound(FreeKey{rounded, 0, 0}); it != set.end(); ++it) {
        const std::uint64_t pad = (alignment - it->address % alignment) % alignment;
        if (it->size < rounded || it->size - rounded < pad) continue;
        ChunkHandle h = it->handle;
        RemoveFree(h);
        if (pad > 0) {
          SplitChunk(h, pad);  // front padding keeps handle h and goes back to a bin
          const ChunkHandle rest = C(h).next;
          RemoveFree(rest);
          InsertFree(h);
          h = rest;
        }
        return TakeChunk(h, rounded, bytes);
      }
    }
    return nullptr;
  }

  void* Find(std::uint64_t rounded, std::uint64_t bytes, std::uint64_t alignment) {
    return alignment <= kMinSize ? FindChunkPtr(rounded, bytes)
                                 : FindAlignedChunkPtr(rounded, bytes, alignment);
  }

  std::uint64_t Granule() const { return params.release_free_granules ? backend.decommit_granularity() : 0; }

  void UpdateReserved() {
    stats.bytes_reserved = total_region_bytes - decommitted_bytes;
    stats.peak_bytes_reserved = std::max(stats.peak_bytes_reserved, stats.bytes_reserved);
  }

  // The first decommitted range that ends after `lo`.
  std::map<std::uintptr_t, std::uint64_t>::iterator FirstDecommittedAfter(std::uintptr_t lo) {
    auto it = decommitted.lower_bound(lo);
    if (it != decommitted.begin() && std::prev(it)->first + std::prev(it)->second > lo) --it;
    return it;
  }

  // Gives back the parts of the granules [lo, hi) not given back yet;
  // false when the backend refuses.
  bool DecommitGaps(std::uintptr_t lo, std::uintptr_t hi) {
    std::uintptr_t cur = lo;
    for (auto it = FirstDecommittedAfter(lo); cur < hi; ++it) {
      const std::uintptr_t gap_end = it != decommitted.end() && it->first < hi ? it->first : hi;
      if (gap_end > cur) {
        if (!backend.Decommit(reinterpret_cast<void*>(cur), gap_end - cur).ok()) return false;
        decommitted.emplace(cur, gap_end - cur);
        decommitted_bytes += gap_end - cur;
      }
      if (gap_end == hi) break;
      cur = it->first + it->second;
    }
    return true;
  }

  // release_free_granules, before the memory held grows by `more` bytes
  // (a new region, or granules taken again) for a block of `rounded`: when
  // the memory held would then exceed the peak in use (this block
  // included) by more than held_slack, whole granules inside free chunks
  // go back, the largest chunks first, until it would not (when growing,
  // not the free tail that a coalescing extension is about to join).
  // Measured against the peak, not the bytes in use now: memory held
  // within the slack of the peak costs nothing more, and giving it back
  // between peaks only to take it again would cost calls.
  void ReleaseFreeGranules(std::uint64_t more, std::uint64_t rounded, bool growing) {
    const std::uint64_t g = Granule();
    if (g == 0) return;
    const double peak = static_cast<double>(std::max(stats.peak_bytes_in_use, stats.bytes_in_use + rounded));
    const auto target = static_cast<std::uint64_t>(peak * (1.0 + params.held_slack));
    auto over = [&] { return stats.bytes_reserved + more > target; };
    if (!over()) return;
    const ChunkHandle tail = growing && FreeTailBeforeNextRegion(kMinSize) > 0 ? regions.back().last : kInvalidChunk;
    for (int b = kNumBins - 1; b >= BinForSize(g) && over(); --b) {
      const FreeSet& set = bins[static_cast<std::size_t>(b)];
      for (auto it = set.rbegin(); it != set.rend() && over(); ++it) {
        const std::uintptr_t lo = (it->address + g - 1) / g * g, hi = (it->address + it->size) / g * g;
        if (it->handle == tail || hi <= lo) continue;
        const bool done = DecommitGaps(lo, hi);
        UpdateReserved();
        if (!done) return;
      }
    }
  }

  // The granules under chunk h that were given back are taken again;
  // false when the backend refuses.
  bool RecommitFor(ChunkHandle h) {
    if (decommitted.empty()) return true;
    const std::uint64_t g = Granule();
    const auto start = reinterpret_cast<std::uintptr_t>(C(h).ptr);
    const std::uintptr_t lo = start / g * g, hi = (start + C(h).size + g - 1) / g * g;
    ReleaseFreeGranules(DecommittedIn(lo, hi), C(h).size, false);
    for (auto it = FirstDecommittedAfter(lo); it != decommitted.end() && it->first < hi;) {
      const std::uintptr_t s = it->first, e = s + it->second;
      const std::uintptr_t a = std::max(s, lo), b = std::min(e, hi);
      if (!backend.Recommit(reinterpret_cast<void*>(a), b - a).ok()) return false;
      it = decommitted.erase(it);
      decommitted_bytes -= b - a;
      if (s < a) decommitted.emplace(s, a - s);
      if (b < e) decommitted.emplace(b, e - b);
    }
    UpdateReserved();
    return true;
  }

  // Bytes given back inside [lo, hi).
  std::uint64_t DecommittedIn(std::uintptr_t lo, std::uintptr_t hi) {
    std::uint64_t bytes = 0;
    for (auto it = FirstDecommittedAfter(lo); it != decommitted.end() && it->first < hi; ++it)
      bytes += std::min(it->first + it->second, hi) - std::max(it->first, lo);
    return bytes;
  }

  // Forgets the granules given back inside [p, p + bytes) (a region that goes).
  void ForgetDecommitted(const char* p, std::uint64_t bytes) {
    const auto lo = reinterpret_cast<std::uintptr_t>(p);
    for (auto it = decommitted.lower_bound(lo); it != decommitted.end() && it->first < lo + bytes;) {
      decommitted_bytes -= it->second;
      it = decommitted.erase(it);
    }
  }

  // The free chunk at the end of the top region when the backend's next
  // region would start right after it (then a coalescing extension needs
  // only the rest of the request).
  std::uint64_t FreeTailBeforeNextRegion(std::uint64_t alignment) const {
    if (!Coalescing() || alignment > kMinSize || regions.empty()) return 0;
    const Region& top = regions.back();
    if (backend.next_address() != top.end()) return 0;
    const Chunk& last = C(top.last);
    return last.in_use ? 0 : last.size;
  }

  // Reserves a new region big enough for `rounded` bytes at `alignment`
  // (or extends the top one, coalescing); false when the limit or the
  // backend refuses.
  bool Extend(std::uint64_t alignment, std::uint64_t rounded) {
    const std::uint64_t region_bytes_before = curr_region_bytes;
    std::optional<RegionSize> size = SizeNextRegion(alignment, rounded);
    if (!size) return false;
    // An aligned request may need the region start aligned; asking the
    // backend for that alignment keeps `rounded` enough.
    Result<void*> mem = ReserveRegion(*size, std::max(alignment, kMinSize));
    if (!mem.ok()) {
      backend_refusal = mem.status().message();
      // A refused request does not leave the next regions sized for it (a
      // huge one would otherwise make every later growth start at 2^63).
      curr_region_bytes = region_bytes_before;
      return false;
    }
    char* const base = static_cast<char*>(*mem);
    Region* region = AddRegion(base, size->bytes);
    if (params.growth == BfcGrowth::kDoubling && !size->increased)
      curr_region_bytes = internal::SaturatingMul(curr_region_bytes, 2);
    total_region_bytes += size->bytes;
    UpdateReserved();
    const ChunkHandle h = NewChunk();
    Chunk& c = C(h);
    c.ptr = base;
    c.size = size->bytes;
    c.prev = region->last;
    if (region->last != kInvalidChunk) C(region->last).next = h;
    region->last = h;
    SetHandle(c.ptr, h);
    InsertFree(TryToCoalesce(h));
    return true;
  }

  struct RegionSize {
    std::uint64_t bytes = 0;   // to reserve
    std::uint64_t needed = 0;  // the least region that serves the request
    bool increased = false;    // doubling: curr_region_bytes grew for this request
  };
  // The next region's size by params.growth, within the limit; nullopt when
  // the request cannot fit under it.
  std::optional<RegionSize> SizeNextRegion(std::uint64_t alignment, std::uint64_t rounded) {
    const std::uint64_t available = RoundDown(params.memory_limit - total_region_bytes);
    RegionSize size;
    size.needed = rounded;
    if (params.growth == BfcGrowth::kOnDemand) {
      size.needed = rounded - std::min(rounded, FreeTailBeforeNextRegion(alignment));
      if (size.needed > available) return std::nullopt;
      size.bytes = std::min(std::max(size.needed, curr_region_bytes), available);
      return size;
    }
    if (rounded > available) return std::nullopt;
    while (rounded > curr_region_bytes) {
      curr_region_bytes = internal::SaturatingMul(curr_region_bytes, 2);
      size.increased = true;
    }
    size.bytes = std::min(curr_region_bytes, available);
    return size;
  }

  // The backend's memory for the region; where it refuses, TensorFlow's
  // backpedal: 90% of the size each time until the request no longer fits
  // (TensorFlow does this only the first time a backend refuses; here every
  // time). Rounded down, and at least one kMinSize less each time: rounding
  // up (TensorFlow's RoundedBytes) stalls below 2,560 bytes, where 90%
  // rounds back to the same size, and a small request the backend refused
  // looped forever (found by the trace fuzzer). size.bytes is what was
  // reserved.
  Result<void*> ReserveRegion(RegionSize& size, std::uint64_t region_alignment) {
    Result<void*> mem = backend.Reserve(size.bytes, region_alignment);
    if (!params.retry_smaller_regions) return mem;
    while (!mem.ok()) {
      std::uint64_t next = RoundDown(size.bytes - size.bytes / 10);
      if (next >= size.bytes) next = size.bytes - kMinSize;
      if (next < size.needed || next == 0) break;
      size.bytes = next;
      mem = backend.Reserve(size.bytes, region_alignment);
    }
    return mem;
  }

  // The region [base, base + bytes) joins: TensorFlow's coalesce_regions
  // extends the region it starts right after (its chunk then joins that
  // region's chunk list); otherwise a new region.
  Region* AddRegion(char* base, std::uint64_t bytes) {
    auto after = [&] {
      return std::upper_bound(regions.begin(), regions.end(), base,
                              [](const char* p, const Region& r) { return p < r.ptr; });
    };
    if (Coalescing()) {
      auto next = after();
      if (next != regions.begin() && std::prev(next)->end() == base) {
        Region* extended = &*std::prev(next);
        extended->bytes += bytes;
        return extended;
      }
    }
    Region region;
    region.ptr = base;
    region.bytes = bytes;
    Region* added = &*regions.insert(after(), std::move(region));
    added->last = kInvalidChunk;
    return added;
  }

  // Regions whose only chunk is free.
  std::vector<std::size_t> WhollyFreeRegions() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < regions.size(); ++i) {
      const ChunkHandle h = First(regions[i]);
      if (h != kInvalidChunk && !C(h).in_use && C(h).size == regions[i].bytes) out.push_back(i);
    }
    return out;
  }

  std::uint64_t DeallocateRegions(const std::vector<std::size_t>& which) {
    std::uint64_t released = 0;
    // Back to front so the indices stay valid while erasing.
    for (auto it = which.rbegin(); it != which.rend(); ++it) {
      Region& r = regions[*it];
      const ChunkHandle h = First(r);
      RemoveFree(h);
      DeleteChunk(h);
      ForgetDecommitted(r.ptr, r.bytes);
      const Status st = backend.Release(r.ptr, r.bytes);
      (void)st;  // a backend that cannot take memory back leaks it; nothing better to do here
      total_region_bytes -= r.bytes;
      released += r.bytes;
      regions.erase(regions.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    UpdateReserved();
    return released;
  }

  // TensorFlow's DeallocateFreeRegions: only when freeing could help.
  bool GarbageCollect(std::uint64_t rounded) {
    if (!params.garbage_collection) return false;
    const std::vector<std::size_t> free_regions = WhollyFreeRegions();
    std::uint64_t free_total = 0;
    for (std::size_t i : free_regions) free_total += regions[i].bytes;
    if (free_total == 0) return false;
    if (rounded > params.memory_limit - total_region_bytes + free_total) return false;
    DeallocateRegions(free_regions);
    return true;
  }

  std::uint64_t LargestFree() const {
    for (int b = kNumBins - 1; b >= 0; --b) {
      const FreeSet& set = bins[static_cast<std::size_t>(b)];
      if (!set.empty()) return std::prev(set.end())->size;
    }
    return 0;
  }

  std::string Report(std::size_t max_chunks) const;
  void ChunkMap(std::ostream& out, std::size_t max_chunks) const;
};

BfcParams CompactBfcParams() {
  BfcParams p;
  p.growth = BfcGrowth::kOnDemand;
  p.initial_region_bytes = std::uint64_t{2} << 20;
  p.coalesce_regions = true;
  p.max_internal_fragmentation_bytes = 0;
  p.release_free_granules = true;
  return p;
}

int BfcAllocator::BinForSize(std::uint64_t bytes) {
  const std::uint64_t v = std::max(bytes, kMinSize) >> kMinBits;
  return std::min(kNumBins - 1, static_cast<int>(std::bit_width(v)) - 1);
}

std::uint64_t BfcAllocator::RoundedBytes(std::uint64_t bytes) {
  return (bytes + kMinSize - 1) / kMinSize * kMinSize;
}

namespace {
constexpr std::array<BfcGrowth, 3> kAllGrowths = {BfcGrowth::kDoubling, BfcGrowth::kOnDemand,
                                                   BfcGrowth::kReserveAll};
}  // namespace

std::string_view Name(BfcGrowth growth) {
  switch (growth) {
    case BfcGrowth::kDoubling: return "doubling";
    case BfcGrowth::kOnDemand: return "on_demand";
    case BfcGrowth::kReserveAll: return "reserve_all";
  }
  return "?";
}
std::span<const BfcGrowth> AllBfcGrowths() { return kAllGrowths; }
Result<BfcGrowth> ParseBfcGrowth(std::string_view name) {
  return internal::ParseName<BfcGrowth>(name, kAllGrowths, "BFC growth");
}

namespace {

struct BfcPresetEntry {
  BfcPreset preset;
  std::string_view name;
  BfcParams (*params)();
  bool virtual_memory;
};
constexpr std::array<BfcPresetEntry, 2> kPresetTable = {{
    {BfcPreset::kTensorflow, "tensorflow", [] { return BfcParams{}; }, false},
    {BfcPreset::kCompact, "compact", CompactBfcParams, true},
}};
constexpr auto kAllPresets = [] {
  std::array<BfcPreset, kPresetTable.size()> out{};
  for (std::size_t i = 0; i < kPresetTable.size(); ++i) out[i] = kPresetTable[i].preset;
  return out;
}();

const BfcPresetEntry& EntryOf(BfcPreset preset) {
  for (const BfcPresetEntry& e : kPresetTable)
    if (e.preset == preset) return e;
  return kPresetTable[0];
}

}  // namespace

std::string_view Name(BfcPreset preset) { return EntryOf(preset).name; }
Result<BfcPreset> ParseBfcPreset(std::string_view name) {
  return internal::ParseName<BfcPreset>(name, kAllPresets, "BFC preset");
}
std::span<const BfcPreset> AllBfcPresets() { return kAllPresets; }
BfcParams BfcPresetParams(BfcPreset preset) { return EntryOf(preset).params(); }
bool BfcPresetUsesVirtualMemory(BfcPreset preset) { return EntryOf(preset).virtual_memory; }

Status Validate(const BfcParams& p) {
  if (p.memory_limit < BfcAllocator::kMinAllocationSize)
    return InvalidArgument("bfc: memory_limit " + std::to_string(p.memory_limit) +
                           " is below the smallest chunk (256 bytes)");
  if (!(p.held_slack >= 0.0) || p.held_slack > 1e9)
    return InvalidArgument("bfc: held_slack " + std::to_string(p.held_slack) + " must be a number >= 0");
  if (p.fit_candidates < 1 || p.fit_candidates > 1024)
    return InvalidArgument("bfc: fit_candidates " + std::to_string(p.fit_candidates) + " must be 1 to 1024");
  if (p.initial_region_bytes == 0)
    return InvalidArgument("bfc: initial_region_bytes must be at least 1 (it is doubled to grow)");
  if (p.initial_region_bytes > (std::uint64_t{1} << 62))
    return InvalidArgument("bfc: initial_region_bytes " + std::to_string(p.initial_region_bytes) +
                           " is above 2^62");
  switch (p.growth) {
    case BfcGrowth::kDoubling:
    case BfcGrowth::kOnDemand:
      break;
    case BfcGrowth::kReserveAll:
      if (p.memory_limit == std::numeric_limits<std::uint64_t>::max())
        return InvalidArgument("bfc: growth reserve_all needs a finite memory_limit");
      break;
    default:
      return InvalidArgument("bfc: unknown growth value " +
                             std::to_string(static_cast<long long>(p.growth)));
  }
  return Status::Ok();
}

BfcAllocator::BfcAllocator(Backend& backend, const BfcParams& params)
    : state_(std::make_unique<State>(backend, params)) {}

Result<std::unique_ptr<BfcAllocator>> BfcAllocator::Create(Backend& backend, const BfcParams& params) {
  TM_RETURN_IF_ERROR(Validate(params));
  return std::make_unique<BfcAllocator>(backend, params);
}

BfcAllocator::~BfcAllocator() {
  for (const Region& r : state_->regions) (void)state_->backend.Release(r.ptr, r.bytes);
}

Result<void*> BfcAllocator::DoAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  State& s = *state_;
  const std::uint64_t rounded = RoundedBytes(bytes);
  if (!s.valid.ok()) return s.valid;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  if (void* p = s.Find(rounded, bytes, alignment)) return p;
  s.backend_refusal.clear();
  s.ReleaseFreeGranules(rounded, rounded, true);
  if (s.Extend(alignment, rounded)) {
    if (void* p = s.Find(rounded, bytes, alignment)) return p;
  }
  if (s.GarbageCollect(rounded) && s.Extend(alignment, rounded)) {
    if (void* p = s.Find(rounded, bytes, alignment)) return p;
  }
  ++s.stats.num_failed_allocs;
  std::string report = s.Report(s.params.report_max_chunks);
  if (report.ends_with('\n')) report.pop_back();  // the message's last line, not a blank one after it
  return ResourceExhausted("bfc: out of memory allocating " + std::to_string(bytes) +
                           " bytes (rounded to " + std::to_string(rounded) + ", alignment " +
                           std::to_string(alignment) + ")" +
                           (s.backend_refusal.empty() ? "" : "; the backend refused: " + s.backend_refusal) +
                           "\n" + report);
}

Status BfcAllocator::DoDeallocate(void* pointer) {
  State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  // The chunk map holds only this allocator's chunk starts; the regions are
  // searched only to say why a pointer is not a live block.
  const ChunkHandle h = s.ChunkAt(pointer);
  if (h == kInvalidChunk && s.RegionFor(pointer) == nullptr)
    return NotFound("bfc: " + PointerToString(pointer) +
                    " was not allocated by this allocator (it lies in none of its regions)");
  if (h == kInvalidChunk || !s.C(h).in_use)
    return FailedPrecondition("bfc: " + PointerToString(pointer) +
                              " is not a live allocation: it was already freed, or it points "
                              "inside a block rather than at its start");
  Chunk& c = s.C(h);
  c.in_use = false;
  c.requested = 0;
  ++s.stats.num_frees;
  s.stats.bytes_in_use -= c.size;
  s.InsertFree(s.TryToCoalesce(h));
  return Status::Ok();
}

AllocatorStats BfcAllocator::DoGetStats() const {
  const State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  AllocatorStats st = s.stats;
  st.free_bytes = s.free_bytes;
  st.largest_free_block = s.LargestFree();
  st.fragmentation = FragmentationMetric(st.largest_free_block, st.free_bytes);
  return st;
}

std::size_t BfcAllocator::num_regions() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->regions.size();
}

std::uint64_t BfcAllocator::ReleaseFreeRegions() {
  State& s = *state_;
  std::lock_guard<internal::AdaptiveMutex> lock(s.mutex);
  return s.DeallocateRegions(s.WhollyFreeRegions());
}

void BfcAllocator::State::ChunkMap(std::ostream& out, std::size_t max_chunks) const {
  std::size_t listed = 0, total = 0;
  for (const Region& r : regions) {
    out << "region " << PointerToString(r.ptr) << " (" << r.bytes << " bytes):\n";
    for (ChunkHandle h = First(r); h != kInvalidChunk; h = C(h).next) {
      ++total;
      if (listed >= max_chunks) continue;
      ++listed;
      const Chunk& c = C(h);
      out << "  " << PointerToString(c.ptr) << ' ' << c.size << ' '
          << (c.in_use ? "used (requested " + std::to_string(c.requested) + ")" : std::string("free"))
          << '\n';
    }
  }
  if (listed < total) out << "  ... " << (total - listed) << " more chunks not listed\n";
}

std::string BfcAllocator::State::Report(std::size_t max_chunks) const {
  std::ostringstream out;
  out << "limit " << (stats.bytes_limit ? std::to_string(*stats.bytes_limit) : std::string("none"))
      << ", reserved " << total_region_bytes << " in " << regions.size() << " regions, in use "
      << stats.bytes_in_use << ", free " << free_bytes << ", largest free block " << LargestFree()
      << '\n';
  // Nothing reserved yet (the first region refused): no empty sections.
  if (regions.empty()) return out.str();
  // Per-bin totals over every chunk (used chunks counted in the bin of their size).
  struct BinTotals {
    std::uint64_t chunks = 0, bytes = 0, in_use_chunks = 0, in_use_bytes = 0, requested = 0;
  };
  std::vector<BinTotals> t(kNumBins);
  for (const Region& r : regions)
    for (ChunkHandle h = First(r); h != kInvalidChunk; h = C(h).next) {
      const Chunk& c = C(h);
      BinTotals& b = t[static_cast<std::size_t>(BinForSize(c.size))];
      ++b.chunks;
      b.bytes += c.size;
      if (c.in_use) {
        ++b.in_use_chunks;
        b.in_use_bytes += c.size;
        b.requested += c.requested;
      }
    }
  out << "bins (size >=: chunks, bytes, in use chunks, in use bytes, requested, free bytes):\n";
  for (int b = 0; b < kNumBins; ++b) {
    const BinTotals& x = t[static_cast<std::size_t>(b)];
    if (x.chunks == 0) continue;
    out << "  bin " << b << " (>= " << HumanBytes(kMinSize << b) << "): " << x.chunks << ", "
        << x.bytes << ", " << x.in_use_chunks << ", " << x.in_use_bytes << ", " << x.requested
        << ", " << (x.bytes - x.in_use_bytes) << '\n';
  }
  out << "chunk map:\n";
  ChunkMap(out, max_chunks);
  return out.str();
}

std::string BfcAllocator::MemoryReport(std::size_t max_chunks) const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Report(max_chunks);
}

void BfcAllocator::DumpChunkMap(std::ostream& out) const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  state_->ChunkMap(out, std::numeric_limits<std::size_t>::max());
}

}  // namespace tensormem
