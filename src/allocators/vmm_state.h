// SPDX-License-Identifier: Apache-2.0
// The vmm allocator's internal state (see vmm_allocator.h for the policy).
// Two spaces of addresses, each with its blocks (an address-ordered list,
// free ones also in a set by size) and its pages (one per granule of
// addresses: the granule mapped there and how many live blocks touch it).
// An allocation places a block (vmm_placement.cc), touches its pages and
// maps those not mapped (vmm_pages.cc) with granules from the pool, the
// cache or the device (vmm_restitch.cc); a free untouches them (mapped pages
// no block touches are the cache) and merges the block with its free
// neighbours, or defers the free for record_stream (vmm_free.cc, with the
// streams and events). vmm_allocator.cc holds the public calls (each takes
// the one lock, `mutex`, under which every function here runs), Validate,
// Create, the statistics and the report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "allocators/adaptive_mutex.h"
#include "allocators/node_arena.h"
#include "allocators/pointer_map.h"
#include "tensormem/allocators/vmm_allocator.h"

namespace tensormem {
namespace vmm {

constexpr std::uint64_t kNoPage = ~std::uint64_t{0};  // no page (a PageId)
constexpr int kSmall = 0;
constexpr int kLarge = 1;

// A page of either space as one integer (the cache's list links pages of
// both): its space above bit 40, its index in the space below.
using PageId = std::uint64_t;
constexpr int kPageIndexBits = 40;
constexpr PageId MakePageId(int space, std::uint64_t index) {
  return std::uint64_t(space) << kPageIndexBits | index;
}
constexpr int SpaceIndexOf(PageId id) { return static_cast<int>(id >> kPageIndexBits); }
constexpr std::uint64_t PageIndexOf(PageId id) { return id & ((std::uint64_t{1} << kPageIndexBits) - 1); }

// `m` is a power of two (granularity, rounding and alignment all are): a
// mask, not a division, on every allocation.
inline std::uint64_t RoundUp(std::uint64_t v, std::uint64_t m) { return (v + m - 1) & ~(m - 1); }

struct Block;

// The free blocks' index holds their size and offset itself: a best-fit
// search then walks the tree without reading a block (a cache miss each).
struct FreeKey {
  std::uint64_t size;
  std::uint64_t offset;
  Block* block;
  explicit FreeKey(Block* b);
  FreeKey(std::uint64_t s, std::uint64_t o) : size(s), offset(o), block(nullptr) {}
};
struct BySizeThenOffset {
  bool operator()(const FreeKey& a, const FreeKey& b) const {
    return a.size != b.size ? a.size < b.size : a.offset < b.offset;
  }
};
using FreeBlocks = std::set<FreeKey, BySizeThenOffset, internal::NodeAllocator<FreeKey>>;

struct Block {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t requested = 0;  // live blocks: bytes asked for
  Block* prev = nullptr;
  Block* next = nullptr;
  bool free = false;
  // Free blocks: who may reuse it. Settled = any stream.
  bool settled = true;
  StreamHandle stream = 0;
  EventHandle event = 0;        // pending event, 0 = none
  std::uint64_t event_seq = 0;  // when it was recorded (events of one stream complete in order)
  // A free block below top: its entry in the space's index, so that taking
  // it out is no search (a tree descent of cache misses on every free).
  FreeBlocks::iterator entry;
};

inline FreeKey::FreeKey(Block* b) : size(b->size), offset(b->offset), block(b) {}

// A run handle taken off its pages, to be mapped whole elsewhere.
struct MovedHandle {
  GranuleHandle handle = 0;
  std::uint64_t pages = 0;
};

// What backs a page TouchAndMap maps: a handle and its pages at the first
// page of a handle, pages 0 on the others of a run handle.
struct Backing {
  GranuleHandle handle = 0;
  std::uint64_t pages = 0;
  bool set = false;
};

struct Page {
  bool mapped = false;
  GranuleHandle granule = 0;  // the handle mapped here (shared by a run handle's pages)
  std::uint32_t touch = 0;  // live blocks on this page
  // A handle of several granules (a run handle) covers pages head..head +
  // handle_pages - 1: the first page holds handle_pages, every page its
  // distance from the first. A single granule: 1 and 0.
  std::uint32_t handle_pages = 1;
  std::uint32_t head_offset = 0;
  std::uint64_t cached_seq = 0;
  PageId lru_prev = kNoPage, lru_next = kNoPage;
  // Refaults (VmmParams::protect_refaulted): cache_seq + 1 when this page's
  // granule was last taken for another place (0: not taken since it was
  // last needed), and the cached pages between that and this page being
  // needed again at its place (0: never).
  std::uint64_t taken_seq = 0;
  std::uint64_t refault_distance = 0;
};

// A space's pages, one per granule of addresses up to the highest the heap
// has reached. It grows with the heap by realloc: glibc moves a large
// block by remapping its pages (mremap), so the table is neither copied
// nor written ahead as it grows; a new page is written when the heap
// reaches it. (A std::vector doubled, copied and wrote its new half at
// once: about 40 % of a cold pass on a 38 GiB training trace.)
class PageTable {
 public:
  PageTable() = default;
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;
  ~PageTable() { std::free(pages_); }
  std::uint64_t size() const { return size_; }
  Page& operator[](std::uint64_t i) { return pages_[i]; }
  const Page& operator[](std::uint64_t i) const { return pages_[i]; }
  // Grows to `n` pages (the new ones unmapped, untouched), its room at
  // least doubled and at most `most` pages where that is more than `n`;
  // false when the host has no memory for it.
  bool Grow(std::uint64_t n, std::uint64_t most) {
    if (n > capacity_ && !Reserve(std::max(n, std::min(capacity_ * 2, most))) && !Reserve(n)) return false;
    for (std::uint64_t i = size_; i < n; ++i) new (&pages_[i]) Page{};
    size_ = n;
    return true;
  }

 private:
  static_assert(std::is_trivially_copyable_v<Page> && std::is_trivially_destructible_v<Page>,
                "realloc moves pages as bytes");
  // Room for `room` pages; false (the table unchanged) when refused.
  bool Reserve(std::uint64_t room) {
    if (room > ~std::uint64_t{0} / sizeof(Page)) return false;
    void* p = std::realloc(pages_, room * sizeof(Page));
    if (p == nullptr) return false;
    pages_ = static_cast<Page*>(p);
    capacity_ = room;
    return true;
  }
  Page* pages_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t capacity_ = 0;
};

struct Space {
  int index = 0;
  char* base = nullptr;
  std::uint64_t size = 0;  // addresses reserved
  std::uint64_t top = 0;   // the wilderness starts here
  Block* tail = nullptr;   // the last block below top
  // Free blocks below top (keys taken out before a block changes).
  std::unique_ptr<internal::NodeArena> nodes = std::make_unique<internal::NodeArena>();
  FreeBlocks free_blocks{BySizeThenOffset{}, internal::NodeAllocator<FreeKey>(nodes.get())};
  PageTable pages;
  std::uint64_t live_blocks = 0;
  // The wilderness's stream tag (a freed block merged into it).
  bool wild_settled = true;
  StreamHandle wild_stream = 0;
  EventHandle wild_event = 0;
  std::uint64_t wild_event_seq = 0;
};

// One AcquireGranules call: what it was asked, what it has found so far,
// and where it started (to undo it).
struct Acquisition {
  std::size_t need;                   // granules still wanted
  std::vector<GranuleHandle>& out;    // single granules found
  std::size_t& reserved;              // new granules counted as held, for the caller to create
  bool allow_create;
  std::vector<MovedHandle>* moved;    // run handles kept whole, or null
  const std::size_t out_before, reserved_before, moved_before;
};

// Where a block goes: a free block and the start within it, or the
// wilderness (block null).
struct Fit {
  Block* block = nullptr;
  std::uint64_t start = 0;
};

// Where a new block goes (VmmState::Place).
struct Placement {
  Space* space;
  Fit fit;
  bool tenant;  // a small block on a large block's pages (fit.start set, also in the wilderness)
};

// A free deferred by record_stream until its events complete.
struct DeferredFree {
  void* pointer;
  Block* block;
  StreamHandle stream;  // the free's
  std::vector<std::pair<StreamHandle, EventHandle>> events;  // one per other stream
};

struct VmmState {
  PhysicalMemory* memory = nullptr;
  VmmParams params;
  std::uint64_t g = 0;  // granularity
  int g_shift = 0;      // log2(g): page of an offset = offset >> g_shift
  mutable internal::AdaptiveMutex mutex;
  Space spaces[2];
  bool has_small = true;

  std::deque<Block> block_storage;
  std::vector<Block*> spare_blocks;
  internal::PointerMap<Block*> live;

  std::vector<GranuleHandle> pool;  // held, unmapped
  std::uint64_t held = 0;           // granules
  std::uint64_t peak_held = 0;
  std::uint64_t touched = 0;       // pages some live block touches
  std::uint64_t peak_touched = 0;
  std::uint64_t cached_pages = 0;
  PageId lru_head = kNoPage, lru_tail = kNoPage;
  std::uint64_t cache_seq = 0;  // pages cached so far
  std::uint64_t safe_seq = 0;   // pages cached up to here are safe to unmap
  // Fences: (cache_seq after a free that cached pages, an event recorded
  // at that free), in order. Pages cached up to an entry are safe once it
  // and every entry before it have completed (frees on different streams
  // complete out of order). One stream: an event recorded for the purpose,
  // one in flight at a time; several streams: the frees' own events. (Up
  // to 4 or 16 in flight with one stream cut the synchronisations under a
  // lag of 200 events, 250 to 189 or 69 on ctx128_fullstep's cold pass, for
  // 3x-7x more event records: 19,201 a pass on gpt2_medium_generate, which
  // never needs a wait; ~60 ms at an assumed 3 us a record.)
  static constexpr std::size_t kMaxFences = 1;
  std::deque<std::pair<std::uint64_t, EventHandle>> fences;

  // record_stream: the other streams of live blocks, and frees waiting for
  // their events (in the order of the frees).
  std::unordered_map<const Block*, std::vector<StreamHandle>> stream_uses;
  std::vector<DeferredFree> deferred;
  std::uint64_t deferred_bytes = 0;

  // Streams.
  bool seen_stream = false;
  bool multi_stream = false;
  StreamHandle first_stream = 0;
  std::unordered_map<EventHandle, std::uint32_t> event_refs;
  std::uint64_t event_seq = 0;

  AllocatorStats stats;
  VmmAllocator::Counters counters;

  // ---- blocks, pages and stream tags: tiny, on every allocation and free ----
  Block* NewBlock() {
    if (!spare_blocks.empty()) {
      Block* b = spare_blocks.back();
      spare_blocks.pop_back();
      *b = Block{};
      return b;
    }
    block_storage.emplace_back();
    return &block_storage.back();
  }
  void DeleteBlock(Block* b) { spare_blocks.push_back(b); }
  Space& SpaceOf(std::uint64_t rounded) {
    return has_small && rounded <= params.small_request_bytes ? spaces[kSmall] : spaces[kLarge];
  }
  // "the space" with one, "the small/large space" with two (reports, errors).
  std::string SpaceName(const Space& s) const {
    return !has_small ? "space" : s.index == kSmall ? "small space" : "large space";
  }
  Page& PageAt(PageId id) { return spaces[SpaceIndexOf(id)].pages[PageIndexOf(id)]; }
  const Page& PageAt(PageId id) const { return spaces[SpaceIndexOf(id)].pages[PageIndexOf(id)]; }
  bool Owns(const void* pointer) const {
    for (const Space& s : spaces)
      if (s.base != nullptr && static_cast<const char*>(pointer) >= s.base &&
          static_cast<const char*>(pointer) < s.base + s.size)
        return true;
    return false;
  }

  // The cache: mapped pages no live block touches, oldest first.
  void LruRemove(PageId id) {
    Page& p = PageAt(id);
    if (p.lru_prev != kNoPage) PageAt(p.lru_prev).lru_next = p.lru_next; else lru_head = p.lru_next;
    if (p.lru_next != kNoPage) PageAt(p.lru_next).lru_prev = p.lru_prev; else lru_tail = p.lru_prev;
    p.lru_prev = p.lru_next = kNoPage;
    --cached_pages;
  }
  // Up to `want` new granules the memory limit still allows.
  std::uint64_t WithinLimit(std::uint64_t want) const {
    if (!params.memory_limit) return want;
    const std::uint64_t limit_granules = *params.memory_limit >> g_shift;
    return limit_granules > held ? std::min<std::uint64_t>(want, limit_granules - held) : 0;
  }
  void LruPushBack(PageId id) {
    Page& p = PageAt(id);
    p.cached_seq = ++cache_seq;
    p.lru_prev = lru_tail;
    p.lru_next = kNoPage;
    if (lru_tail != kNoPage) PageAt(lru_tail).lru_next = id; else lru_head = id;
    lru_tail = id;
    ++cached_pages;
  }

  // Untouches the pages of [offset, offset + size): those no live block
  // touches any more join the cache.
  void Untouch(Space& s, std::uint64_t offset, std::uint64_t size) {
    const std::uint64_t first = offset >> g_shift, last = (offset + size - 1) >> g_shift;
    for (std::uint64_t i = first; i <= last; ++i) {
      Page& p = s.pages[i];
      if (--p.touch == 0) {
        --touched;
        if (p.mapped) LruPushBack(MakePageId(s.index, i));
      }
    }
  }
  // A run handle (first page `head`) can go once no live block is on any of
  // its pages (and, with `safe_only`, the device has finished with them).
  bool RunHandleFree(const Space& s, std::uint64_t head, bool safe_only) const {
    for (std::uint64_t k = head; k < head + s.pages[head].handle_pages; ++k)
      if (s.pages[k].touch != 0 || (safe_only && s.pages[k].cached_seq > safe_seq)) return false;
    return true;
  }

  // A cached page passed over by re-stitching (VmmParams::protect_refaulted):
  // one that was needed again soon after its granule was last taken, while
  // it has been cached for less time than that took.
  bool Protected(const Page& p) const {
    return p.refault_distance != 0 && cache_seq - p.cached_seq < p.refault_distance;
  }

  void RefEvent(EventHandle e) {
    if (e != 0) ++event_refs[e];
  }
  void UnrefEvent(EventHandle e) {
    if (e == 0) return;
    auto it = event_refs.find(e);
    if (it == event_refs.end()) return;
    if (--it->second == 0) {
      memory->DestroyEvent(e);
      event_refs.erase(it);
    }
  }
  // Settles a free block whose event has completed.
  bool Settled(Block* b) {
    if (b->settled) return true;
    if (b->event != 0 && memory->EventCompleted(b->event)) {
      UnrefEvent(b->event);
      b->event = 0;
      b->settled = true;
    }
    return b->settled;
  }
  bool WildSettled(Space& s) {
    if (!s.wild_settled && s.wild_event != 0 && memory->EventCompleted(s.wild_event)) {
      UnrefEvent(s.wild_event);
      s.wild_event = 0;
      s.wild_settled = true;
    }
    return s.wild_settled;
  }
  bool Usable(Block* b, StreamHandle stream) { return b->stream == stream || Settled(b); }
  void CopyTag(Block* to, const Block* from) {
    to->settled = from->settled;
    to->stream = from->stream;
    to->event = from->event;
    to->event_seq = from->event_seq;
    RefEvent(to->event);
  }
  // The stream of an allocation or a free: the second stream seen turns
  // events on (StartMultiStream).
  Status NoteStream(StreamHandle stream) {
    if (!seen_stream) {
      seen_stream = true;
      first_stream = stream;
      return Status::Ok();
    }
    if (multi_stream || stream == first_stream) return Status::Ok();
    return StartMultiStream();
  }

  // Each group below is defined in the file it names. Those declared
  // inline are called only in that file, on every allocation or free:
  // inline, the compiler folds them into their callers as it did when all
  // were in one file (there is no LTO; out of line, an allocation ran about
  // 10% more instructions).

  // ---- streams, events and frees (vmm_free.cc) ----
  Status StartMultiStream();
  Status SettleWilderness(Space& s);
  Status NotLive(const void* pointer, const char* what) const;
  Status RecordStream(void* pointer, StreamHandle stream);
  Status Deallocate(void* pointer, StreamHandle stream);
  Status DeferFree(void* pointer, Block* block,
                   std::unordered_map<const Block*, std::vector<StreamHandle>>::iterator uses,
                   StreamHandle stream);
  Status FinishDeferredFrees(bool wait);
  bool DeferredEventsDone(const DeferredFree& d, bool wait, std::vector<StreamHandle>& pending, Status& result);
  Result<EventHandle> FreeEvent(StreamHandle stream);
  Status Release(void* pointer, Block* b, StreamHandle stream, EventHandle event);
  inline Block* MergeWithNeighbours(Space& s, Block* b);
  inline bool Mergeable(Block* a, Block* b);
  inline void MergeInto(Block* a, Block* b);
  inline Status ReturnToWilderness(Space& s, Block* b);

  // ---- placement and the allocation (vmm_placement.cc) ----
  Result<void*> Allocate(std::uint64_t bytes, std::uint64_t alignment, StreamHandle stream);
  Result<void*> AllocateOnce(std::uint64_t bytes, std::uint64_t alignment, StreamHandle stream);
  template <typename Aligned>
  inline Placement Place(std::uint64_t need, std::uint64_t rounded, StreamHandle stream, const Aligned& aligned,
                         std::uint64_t alignment);
  template <typename Aligned>
  inline Fit FindFit(Space& s, std::uint64_t need, std::uint64_t rounded, StreamHandle stream,
                     const Aligned& aligned, std::uint64_t alignment);
  template <typename Aligned>
  inline std::optional<Fit> FindTenantFit(Space& s, std::uint64_t need, std::uint64_t rounded,
                                          StreamHandle stream, const Aligned& aligned, std::uint64_t alignment);
  inline std::uint64_t UnmappedPages(const Space& s, std::uint64_t offset, std::uint64_t size,
                                     std::uint64_t enough) const;
  inline std::uint64_t LoneEnds(const Space& s, std::uint64_t start, std::uint64_t size) const;
  inline bool AllTouched(const Space& s, std::uint64_t offset, std::uint64_t size) const;
  inline Block* CarveFromFree(Space& s, Block* fit, std::uint64_t start, std::uint64_t rounded);
  inline Block* CarveFromWilderness(Space& s, std::uint64_t start, std::uint64_t rounded);
  Status Exhausted(std::uint64_t bytes, const std::string& why);

  // ---- pages: touching, mapping, the cache list (vmm_pages.cc) ----
  Status TouchAndMap(Space& s, std::uint64_t offset, std::uint64_t size, bool ahead_allowed = true);
  Status RefuseBeyondLimit(const Space& s, std::uint64_t first, std::uint64_t last) const;
  inline Status EnsurePages(Space& s, std::uint64_t end_offset);
  inline std::vector<std::uint64_t> TouchPages(Space& s, std::uint64_t first, std::uint64_t last);
  std::size_t CreateAhead(Space& s, std::uint64_t end, std::vector<std::uint64_t>& todo, std::size_t reserved);
  inline std::size_t HandleEnd(const std::vector<std::uint64_t>& todo, const std::vector<Backing>& back,
                               std::size_t k) const;
  void PlaceMovedHandles(const std::vector<std::uint64_t>& todo, std::vector<Backing>& back, std::size_t from,
                         std::vector<MovedHandle>& moved);
  Status BackTheRest(const std::vector<std::uint64_t>& todo, std::vector<Backing>& back, std::size_t from);
  std::size_t CreateHandles(const std::vector<std::uint64_t>& todo, std::vector<Backing>& back, std::size_t from,
                            Status& refused);
  Status MapBacked(Space& s, const std::vector<std::uint64_t>& todo, const std::vector<Backing>& back,
                   std::size_t& mapped_upto);
  void ReturnUnmapped(const std::vector<Backing>& back, std::size_t mapped_upto);
  Result<MovedHandle> UnmapRunHandle(Space& s, std::uint64_t head);
  Status ReleaseHandles(std::span<const MovedHandle> handles);
  Result<std::uint64_t> ReleaseRunHandle(Space& s, std::uint64_t head);
  Result<std::uint64_t> ReleaseCached();

  // ---- granules for pages to map: pool, re-stitch, fences (vmm_restitch.cc) ----
  Status AcquireGranules(std::size_t count, std::vector<GranuleHandle>& out, std::size_t& reserved,
                         bool allow_create, std::vector<MovedHandle>* moved = nullptr);
  Status FindGranules(Acquisition& a);
  void ReserveNew(Acquisition& a, std::size_t want);
  Status Restitch(Acquisition& a, bool may_wait);
  PageId FirstUnsafePage() const;
  PageId NewestBelow(PageId unsafe) const;
  Status TakeSafePages(Acquisition& a);
  Status TakeSafePagesOnce(Acquisition& a, PageId unsafe, bool pass_protected);
  Status TakeRunHandle(Acquisition& a, Space& s, std::uint64_t head);
  Status TakeSingles(Acquisition& a, Space& s, std::uint64_t i);
  Status WaitForFencesAndRestitch(Acquisition& a);
  void UndoAcquisition(Acquisition& a);
  std::uint64_t OldestTakeableUnsafe();
  void PollFence();
  Status RecordFence(StreamHandle stream, EventHandle event);

  // ---- statistics and the report (vmm_allocator.cc) ----
  AllocatorStats Stats() const;
  std::string Report(std::size_t max_blocks) const;
};

}  // namespace vmm

struct VmmAllocator::State : vmm::VmmState {};

}  // namespace tensormem
