// The vmm allocator (see vmm_allocator.h for the policy). Inside:
// - per space: blocks in an address-ordered list, free ones in a set ordered
//   by (size, offset); addresses at and above `top` belong to no block (the
//   wilderness, where requests no free block fits go). A free block that
//   ends at the top merges into the wilderness.
// - per space: one Page per granule of addresses below the high-water mark:
//   the granule mapped there (if any) and how many live blocks touch it.
//   Mapped pages no live block touches are "cached" and sit in one list
//   shared by both spaces, in the order they were cached; re-stitching takes
//   the newest that needs no wait.
// - device safety: a cached page may still be in use by work queued before
//   its free. Pages are numbered by when they were cached; a Synchronize
//   makes every page cached so far safe to unmap, so a re-stitch waits only
//   when the oldest cached page came after the last wait.
// - streams: a free block is tagged with the stream it was freed on (and,
//   once a second stream has been seen, an event recorded at the free). It
//   is reusable by another stream once settled (its event completed).
#include "tensormem/allocators/vmm_allocator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace tensormem {
namespace {

constexpr std::uint64_t kNoPage = ~std::uint64_t{0};
constexpr int kSmall = 0;
constexpr int kLarge = 1;
constexpr std::uint64_t kPageBits = 40;  // page id = space << 40 | page index

std::uint64_t RoundUp(std::uint64_t v, std::uint64_t m) { return (v + m - 1) / m * m; }

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
};

struct BySizeThenOffset {
  bool operator()(const Block* a, const Block* b) const {
    return a->size != b->size ? a->size < b->size : a->offset < b->offset;
  }
};

struct Page {
  bool mapped = false;
  GranuleHandle granule = 0;
  std::uint32_t touch = 0;  // live blocks on this page
  std::uint64_t cached_seq = 0;
  std::uint64_t lru_prev = kNoPage, lru_next = kNoPage;
};

struct Space {
  int index = 0;
  char* base = nullptr;
  std::uint64_t size = 0;  // addresses reserved
  std::uint64_t top = 0;   // the wilderness starts here
  Block* tail = nullptr;   // the last block below top
  std::set<Block*, BySizeThenOffset> free_blocks;
  std::vector<Page> pages;
  std::uint64_t live_blocks = 0;
  // The wilderness's stream tag (a freed block merged into it).
  bool wild_settled = true;
  StreamHandle wild_stream = 0;
  EventHandle wild_event = 0;
  std::uint64_t wild_event_seq = 0;
};

}  // namespace

struct VmmAllocator::State {
  PhysicalMemory* memory = nullptr;
  VmmParams params;
  std::uint64_t g = 0;  // granularity
  mutable std::mutex mutex;
  Space spaces[2];
  bool has_small = true;

  std::deque<Block> block_storage;
  std::vector<Block*> spare_blocks;
  std::unordered_map<const void*, Block*> live;

  std::vector<GranuleHandle> pool;  // held, unmapped
  std::uint64_t held = 0;           // granules
  std::uint64_t peak_held = 0;
  std::uint64_t touched = 0;       // pages some live block touches
  std::uint64_t peak_touched = 0;
  std::uint64_t cached_pages = 0;
  std::uint64_t lru_head = kNoPage, lru_tail = kNoPage;
  std::uint64_t cache_seq = 0;  // pages cached so far
  std::uint64_t safe_seq = 0;   // pages cached up to here are safe to unmap
  // One event at a time recorded after a free that cached pages: once it
  // completes, every page cached before it is safe without a wait.
  EventHandle fence = 0;
  bool fence_pending = false;
  std::uint64_t fence_seq = 0;

  // Streams.
  bool seen_stream = false;
  bool multi_stream = false;
  StreamHandle first_stream = 0;
  std::unordered_map<EventHandle, std::uint32_t> event_refs;
  std::uint64_t event_seq = 0;

  AllocatorStats stats;
  Counters counters;

  // ---- blocks ----
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
  Page& PageAt(std::uint64_t id) { return spaces[id >> kPageBits].pages[id & ((std::uint64_t{1} << kPageBits) - 1)]; }

  // ---- events ----
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
  Status NoteStream(StreamHandle stream) {
    if (!seen_stream) {
      seen_stream = true;
      first_stream = stream;
      return Status::Ok();
    }
    if (multi_stream || stream == first_stream) return Status::Ok();
    // A second stream: blocks freed so far on the first one get an event
    // recorded now (later than their frees, so it covers them).
    multi_stream = true;
    TM_ASSIGN_OR_RETURN(EventHandle e, memory->RecordEvent(first_stream));
    ++counters.events_recorded;
    const std::uint64_t seq = ++event_seq;
    for (Space& s : spaces) {
      for (Block* b = s.tail; b != nullptr; b = b->prev) {
        if (b->free && !b->settled && b->event == 0) {
          b->event = e;
          b->event_seq = seq;
          RefEvent(e);
        }
      }
      if (!s.wild_settled && s.wild_event == 0) {
        s.wild_event = e;
        s.wild_event_seq = seq;
        RefEvent(e);
      }
    }
    if (e == 0) {  // nothing to wait for: everything freed so far is settled
      for (Space& s : spaces) {
        for (Block* b = s.tail; b != nullptr; b = b->prev)
          if (b->free) b->settled = true;
        s.wild_settled = true;
      }
    } else if (event_refs.find(e) == event_refs.end()) {
      memory->DestroyEvent(e);
    }
    return Status::Ok();
  }
  bool Usable(Block* b, StreamHandle stream) { return b->stream == stream || Settled(b); }
  void CopyTag(Block* to, const Block* from) {
    to->settled = from->settled;
    to->stream = from->stream;
    to->event = from->event;
    to->event_seq = from->event_seq;
    RefEvent(to->event);
  }

  // ---- pages ----
  void LruRemove(std::uint64_t id) {
    Page& p = PageAt(id);
    if (p.lru_prev != kNoPage) PageAt(p.lru_prev).lru_next = p.lru_next; else lru_head = p.lru_next;
    if (p.lru_next != kNoPage) PageAt(p.lru_next).lru_prev = p.lru_prev; else lru_tail = p.lru_prev;
    p.lru_prev = p.lru_next = kNoPage;
    --cached_pages;
  }
  void LruPushBack(std::uint64_t id) {
    Page& p = PageAt(id);
    p.cached_seq = ++cache_seq;
    p.lru_prev = lru_tail;
    p.lru_next = kNoPage;
    if (lru_tail != kNoPage) PageAt(lru_tail).lru_next = id; else lru_head = id;
    lru_tail = id;
    ++cached_pages;
  }
  void EnsurePages(Space& s, std::uint64_t end_offset) {
    const std::uint64_t n = RoundUp(end_offset, g) / g;
    if (s.pages.size() < n) s.pages.resize(std::max<std::uint64_t>(n, std::min<std::uint64_t>(s.pages.size() * 2, s.size / g)));
  }
  std::uint64_t FirstPage(const Block* b) const { return b->offset / g; }
  std::uint64_t LastPage(const Block* b) const { return (b->offset + b->size - 1) / g; }

  // Takes `count` granules for pages outside [first, last] of space `si`
  // (already touched, so not in the LRU): from the pool, then cached pages
  // and new granules in the order the params say. All or nothing: on
  // failure what was taken goes to the pool.
  Status AcquireGranules(std::size_t count, std::vector<GranuleHandle>& out) {
    const std::size_t from_pool = std::min(count, pool.size());
    out.insert(out.end(), pool.end() - static_cast<std::ptrdiff_t>(from_pool), pool.end());
    pool.resize(pool.size() - from_pool);
    std::size_t need = count - from_pool;
    Status created_status = Status::Ok();
    auto create = [&](std::size_t want) {
      if (want == 0) return;
      std::uint64_t allowed = want;
      if (params.memory_limit) {
        const std::uint64_t limit_granules = *params.memory_limit / g;
        allowed = limit_granules > held ? std::min<std::uint64_t>(want, limit_granules - held) : 0;
      }
      if (allowed == 0) return;
      const std::size_t before = out.size();
      Status st = memory->CreateGranules(allowed, out);
      if (!st.ok() && allowed > 1) {
        // The device may grant fewer: one at a time.
        st = Status::Ok();
        for (std::uint64_t i = 0; i < allowed && st.ok(); ++i) st = memory->CreateGranules(1, out);
      }
      if (!st.ok()) created_status = st;
      const std::size_t got = out.size() - before;
      held += got;
      peak_held = std::max(peak_held, held);
      counters.granules_created += got;
      need -= got;
    };
    // Takes the newest cached page that needs no wait for the device (any
    // cached page, after a Synchronize, when `may_wait`) and the cached pages
    // right above it that need none either (one unmap call for the run).
    // Newest first, as a cache under a loop evicts: the page cached longest
    // ago is the one the next iteration of a training step reaches soonest,
    // so taking the oldest moved most pages again in every step (17,522 of
    // 19,661 per pass on transformer_ctx128_fullstep; 1,062 newest first).
    auto restitch = [&](bool may_wait) -> Status {
      PollFence();
      for (int round = 0; round < 2 && need > 0; ++round) {
        if (round == 1) {  // the safe pages did not suffice
          if (!may_wait || lru_tail == kNoPage) break;
          TM_RETURN_IF_ERROR(memory->Synchronize());
          ++counters.synchronizations;
          safe_seq = cache_seq;
        }
        // Pages cached after safe_seq (still in use by the device) are the
        // newest: a suffix of the list, left alone. `unsafe` is its first.
        std::uint64_t unsafe = kNoPage;
        for (std::uint64_t id = lru_tail; id != kNoPage && PageAt(id).cached_seq > safe_seq; id = PageAt(id).lru_prev)
          unsafe = id;
        while (need > 0) {
          const std::uint64_t id = unsafe == kNoPage ? lru_tail : PageAt(unsafe).lru_prev;
          if (id == kNoPage) break;
          Space& s = spaces[id >> kPageBits];
          const std::uint64_t first = id & ((std::uint64_t{1} << kPageBits) - 1);
          std::uint64_t end = first + 1;
          while (end - first < need && end < s.pages.size() && s.pages[end].mapped && s.pages[end].touch == 0 &&
                 s.pages[end].cached_seq <= safe_seq)
            ++end;
          TM_RETURN_IF_ERROR(memory->Unmap(s.base + first * g, end - first));
          for (std::uint64_t i = first; i < end; ++i) {
            const std::uint64_t pid = (std::uint64_t(s.index) << kPageBits) | i;
            LruRemove(pid);
            s.pages[i].mapped = false;
            out.push_back(s.pages[i].granule);
          }
          counters.pages_unmapped += end - first;
          counters.pages_restitched += end - first;
          need -= end - first;
        }
      }
      return Status::Ok();
    };
    Status st = Status::Ok();
    if (params.restitch_before_growing) {
      // Growth within the slack over the most pages ever touched at once
      // costs one create; a re-stitch costs an unmap and a map, and in a
      // steady state would repeat every iteration.
      const double cap = std::floor(double(peak_touched) * (1.0 + params.growth_slack));
      if (cap > double(held)) create(std::min<std::uint64_t>(need, std::uint64_t(cap - double(held))));
      st = restitch(false);  // pages safe without waiting for the device
      if (st.ok()) create(need);
      if (st.ok()) st = restitch(true);
    } else {
      create(need);
      st = restitch(true);
    }
    if (st.ok() && need == 0) return Status::Ok();
    pool.insert(pool.end(), out.end() - static_cast<std::ptrdiff_t>(count - need), out.end());
    out.resize(out.size() - (count - need));
    if (!st.ok()) return st;
    std::string why = "needs " + std::to_string(need) + " more granule(s) of " + HumanBytes(g);
    if (params.memory_limit) why += "; the limit is " + HumanBytes(*params.memory_limit);
    if (!created_status.ok()) why += "; the device refused: " + created_status.message();
    return ResourceExhausted(why);
  }

  void PollFence() {
    if (fence_pending && memory->EventCompleted(fence)) {
      safe_seq = std::max(safe_seq, fence_seq);
      memory->DestroyEvent(fence);
      fence_pending = false;
    }
  }
  // After a free that cached pages: a fence on its stream (single-stream
  // use only; with several streams a re-stitch waits for the device).
  Status RecordFence(StreamHandle stream) {
    PollFence();
    if (fence_pending || multi_stream || cache_seq == safe_seq) return Status::Ok();
    TM_ASSIGN_OR_RETURN(EventHandle e, memory->RecordEvent(stream));
    ++counters.events_recorded;
    if (e == 0) {  // nothing in flight
      safe_seq = cache_seq;
      return Status::Ok();
    }
    fence = e;
    fence_seq = cache_seq;
    fence_pending = true;
    return Status::Ok();
  }

  // Touches the pages of [offset, offset + size) of s and maps those not
  // mapped. On failure nothing is touched.
  Status TouchAndMap(Space& s, std::uint64_t offset, std::uint64_t size) {
    const std::uint64_t first = offset / g, last = (offset + size - 1) / g;
    EnsurePages(s, offset + size);
    std::size_t unmapped = 0;
    for (std::uint64_t i = first; i <= last; ++i) {
      Page& p = s.pages[i];
      if (p.touch++ == 0) {
        ++touched;
        if (p.mapped) LruRemove((std::uint64_t(s.index) << kPageBits) | i);
      }
      if (!p.mapped) ++unmapped;
    }
    peak_touched = std::max(peak_touched, touched);
    if (unmapped == 0) return Status::Ok();
    std::vector<GranuleHandle> granules;
    granules.reserve(unmapped);
    Status st = AcquireGranules(unmapped, granules);
    std::size_t used = 0;
    // Map each run of unmapped pages with one call.
    for (std::uint64_t i = first; st.ok() && i <= last;) {
      if (s.pages[i].mapped) {
        ++i;
        continue;
      }
      std::uint64_t j = i;
      while (j <= last && !s.pages[j].mapped) ++j;
      const std::span<const GranuleHandle> run(granules.data() + used, j - i);
      st = memory->Map(s.base + i * g, run);
      if (!st.ok()) break;
      ++counters.map_calls;
      counters.pages_mapped += j - i;
      for (std::uint64_t k = i; k < j; ++k) {
        s.pages[k].mapped = true;
        s.pages[k].granule = granules[used++];
      }
      i = j;
    }
    if (st.ok()) return Status::Ok();
    // Undo: granules not mapped go to the pool; pages mapped now stay
    // mapped and become cached when their touch drops back to 0.
    pool.insert(pool.end(), granules.begin() + static_cast<std::ptrdiff_t>(used), granules.end());
    Untouch(s, offset, size);
    return st;
  }
  void Untouch(Space& s, std::uint64_t offset, std::uint64_t size) {
    const std::uint64_t first = offset / g, last = (offset + size - 1) / g;
    for (std::uint64_t i = first; i <= last; ++i) {
      Page& p = s.pages[i];
      if (--p.touch == 0) {
        --touched;
        if (p.mapped) LruPushBack((std::uint64_t(s.index) << kPageBits) | i);
      }
    }
  }

  // ---- allocation ----
  // Pages of [offset, offset + size) with no granule mapped.
  std::uint64_t UnmappedPages(const Space& s, std::uint64_t offset, std::uint64_t size) const {
    const std::uint64_t first = offset / g, last = (offset + size - 1) / g;
    std::uint64_t n = 0;
    for (std::uint64_t i = first; i <= last; ++i)
      if (i >= s.pages.size() || !s.pages[i].mapped) ++n;
    return n;
  }

  // Best fit among the free blocks `stream` may use; among the first
  // kCandidates that fit, the first whose pages are all mapped wins (no map
  // call, no re-stitch), else the best fit. Null: the wilderness.
  static constexpr int kCandidates = 8;
  template <typename Aligned>
  Block* FindFit(Space& s, std::uint64_t need, std::uint64_t rounded, StreamHandle stream, const Aligned& aligned) {
    Block key;
    key.size = need;
    key.offset = 0;
    Block* best = nullptr;
    int looked = 0;
    for (auto it = s.free_blocks.lower_bound(&key); it != s.free_blocks.end() && looked < kCandidates; ++it) {
      if (!Usable(*it, stream)) continue;
      ++looked;
      if (best == nullptr) best = *it;
      if (UnmappedPages(s, aligned((*it)->offset), rounded) == 0) return *it;
    }
    // The wilderness may hold cached pages where a best fit would need maps.
    if (best != nullptr && UnmappedPages(s, aligned(best->offset), rounded) > 0 &&
        aligned(s.top) + rounded <= s.size && UnmappedPages(s, aligned(s.top), rounded) == 0 &&
        (WildSettled(s) || s.wild_stream == stream))
      return nullptr;
    return best;
  }

  Result<void*> Allocate(std::uint64_t bytes, std::uint64_t alignment, StreamHandle stream) {
    TM_RETURN_IF_ERROR(NoteStream(stream));
    const std::uint64_t r = params.block_rounding_bytes;
    const std::uint64_t rounded = RoundUp(bytes, r);
    const std::uint64_t slack = alignment > r ? alignment - r : 0;
    Space& s = SpaceOf(rounded);
    const auto base = reinterpret_cast<std::uintptr_t>(s.base);
    // A plain lambda (no std::function): this runs on every allocation.
    const auto aligned = [&](std::uint64_t off) { return RoundUp(base + off, alignment) - base; };

    Block* fit = FindFit(s, rounded + slack, rounded, stream, aligned);
    std::uint64_t start;
    if (fit != nullptr) {
      start = aligned(fit->offset);
    } else {
      if (!WildSettled(s) && s.wild_stream != stream) {
        TM_RETURN_IF_ERROR(memory->Synchronize());
        ++counters.synchronizations;
        safe_seq = cache_seq;
        UnrefEvent(s.wild_event);
        s.wild_event = 0;
        s.wild_settled = true;
      }
      start = aligned(s.top);
      if (start > s.size || rounded > s.size - start)
        return Exhausted(bytes, "the " + std::string(s.index == kSmall ? "small" : "large") +
                                    " space's " + HumanBytes(s.size) + " of addresses are used up");
    }
    if (Status st = TouchAndMap(s, start, rounded); !st.ok()) {
      if (st.code() == StatusCode::kResourceExhausted) return Exhausted(bytes, st.message());
      return st;
    }
    Block* b;
    if (fit != nullptr) {
      s.free_blocks.erase(fit);
      b = fit;
      if (start > b->offset) {  // the skipped front stays free, with b's tag
        Block* front = NewBlock();
        front->offset = b->offset;
        front->size = start - b->offset;
        front->free = true;
        CopyTag(front, b);
        front->prev = b->prev;
        front->next = b;
        if (b->prev) b->prev->next = front;
        b->prev = front;
        b->offset = start;
        b->size -= front->size;
        s.free_blocks.insert(front);
      }
      if (b->size > rounded) {  // the rest stays free, with b's tag
        Block* back = NewBlock();
        back->offset = start + rounded;
        back->size = b->size - rounded;
        back->free = true;
        CopyTag(back, b);
        back->prev = b;
        back->next = b->next;
        if (b->next) b->next->prev = back; else s.tail = back;
        b->next = back;
        b->size = rounded;
        s.free_blocks.insert(back);
      }
      UnrefEvent(b->event);
      b->event = 0;
    } else {
      if (start > s.top) {  // alignment gap below the block
        Block* gap = NewBlock();
        gap->offset = s.top;
        gap->size = start - s.top;
        gap->free = true;
        gap->settled = s.wild_settled;
        gap->stream = s.wild_stream;
        gap->event = s.wild_event;
        gap->event_seq = s.wild_event_seq;
        RefEvent(gap->event);
        gap->prev = s.tail;
        if (s.tail) s.tail->next = gap;
        s.tail = gap;
        s.free_blocks.insert(gap);
      }
      b = NewBlock();
      b->offset = start;
      b->size = rounded;
      b->prev = s.tail;
      if (s.tail) s.tail->next = b;
      s.tail = b;
      s.top = start + rounded;
    }
    b->free = false;
    b->settled = true;
    b->stream = stream;
    b->requested = bytes;
    ++s.live_blocks;
    void* p = s.base + b->offset;
    live.emplace(p, b);
    ++stats.num_allocs;
    stats.bytes_in_use += b->size;
    stats.peak_bytes_in_use = std::max(stats.peak_bytes_in_use, stats.bytes_in_use);
    stats.largest_alloc_size = std::max(stats.largest_alloc_size, rounded);
    return p;
  }

  Status Exhausted(std::uint64_t bytes, const std::string& why) {
    ++stats.num_failed_allocs;
    return ResourceExhausted("vmm: out of memory allocating " + std::to_string(bytes) + " bytes (" +
                             HumanBytes(bytes) + "): " + why + "\n" + Report(params.report_max_blocks));
  }

  // Merges free neighbours a (lower) and b (higher) when their tags allow.
  bool Mergeable(Block* a, Block* b) {
    if (Settled(a) || Settled(b)) return true;
    return a->stream == b->stream;
  }
  void MergeInto(Block* a, Block* b) {  // b (the higher) disappears into a
    if (a->settled && !b->settled) {
      a->settled = false;
      a->stream = b->stream;
      a->event = b->event;
      a->event_seq = b->event_seq;
      b->event = 0;
    } else if (!a->settled && !b->settled && b->event_seq > a->event_seq) {
      UnrefEvent(a->event);
      a->event = b->event;
      a->event_seq = b->event_seq;
      b->event = 0;
    }
    UnrefEvent(b->event);
    a->size += b->size;
    a->next = b->next;
    if (b->next) b->next->prev = a;
    DeleteBlock(b);
  }

  Status Deallocate(void* pointer, StreamHandle stream) {
    auto it = live.find(pointer);
    if (it == live.end()) {
      for (const Space& s : spaces)
        if (s.base != nullptr && static_cast<char*>(pointer) >= s.base &&
            static_cast<char*>(pointer) < s.base + s.size)
          return FailedPrecondition("vmm: " + PointerToString(pointer) +
                                    " is not a live allocation (freed twice, or inside a block)");
      return NotFound("vmm: " + PointerToString(pointer) + " was not allocated by this allocator");
    }
    TM_RETURN_IF_ERROR(NoteStream(stream));
    Block* b = it->second;
    Space& s = spaces[static_cast<char*>(pointer) >= spaces[kLarge].base &&
                              static_cast<char*>(pointer) < spaces[kLarge].base + spaces[kLarge].size
                          ? kLarge
                          : kSmall];
    EventHandle event = 0;
    if (multi_stream) {
      TM_ASSIGN_OR_RETURN(event, memory->RecordEvent(stream));
      ++counters.events_recorded;
    }
    live.erase(it);
    --s.live_blocks;
    ++stats.num_frees;
    stats.bytes_in_use -= b->size;
    const std::uint64_t cached_before = cache_seq;
    Untouch(s, b->offset, b->size);
    if (cache_seq != cached_before) TM_RETURN_IF_ERROR(RecordFence(stream));
    b->free = true;
    b->settled = multi_stream && event == 0;  // a device with nothing to wait for
    b->stream = stream;
    b->event = event;
    b->event_seq = ++event_seq;
    RefEvent(event);
    if (b->prev && b->prev->free && Mergeable(b->prev, b)) {
      Block* a = b->prev;
      s.free_blocks.erase(a);
      MergeInto(a, b);
      if (s.tail == b) s.tail = a;
      b = a;
    }
    if (b->next && b->next->free && Mergeable(b, b->next)) {
      Block* c = b->next;
      s.free_blocks.erase(c);
      if (s.tail == c) s.tail = b;
      MergeInto(b, c);
    }
    if (b->next == nullptr) {  // the top block: back to the wilderness
      if (!b->settled) {
        if (!WildSettled(s) && s.wild_stream != b->stream) {
          // Two streams' pending frees meet: keep both ordered by waiting.
          TM_RETURN_IF_ERROR(memory->Synchronize());
          ++counters.synchronizations;
          safe_seq = cache_seq;
          UnrefEvent(s.wild_event);
          s.wild_event = 0;
        }
        UnrefEvent(s.wild_event);
        s.wild_settled = false;
        s.wild_stream = b->stream;
        s.wild_event = b->event;
        s.wild_event_seq = b->event_seq;
        b->event = 0;
      }
      s.top = b->offset;
      s.tail = b->prev;
      if (s.tail) s.tail->next = nullptr;
      DeleteBlock(b);
    } else {
      s.free_blocks.insert(b);
    }
    return Status::Ok();
  }

  // ---- release, statistics, report ----
  Result<std::uint64_t> ReleaseCached() {
    if (cached_pages > 0 || !pool.empty()) {
      TM_RETURN_IF_ERROR(memory->Synchronize());
      ++counters.synchronizations;
      safe_seq = cache_seq;
    }
    while (lru_head != kNoPage) {
      const std::uint64_t id = lru_head;
      Page& p = PageAt(id);
      Space& s = spaces[id >> kPageBits];
      TM_RETURN_IF_ERROR(memory->Unmap(s.base + (id & ((std::uint64_t{1} << kPageBits) - 1)) * g, 1));
      LruRemove(id);
      p.mapped = false;
      ++counters.pages_unmapped;
      pool.push_back(p.granule);
    }
    std::uint64_t released = 0;
    while (!pool.empty()) {
      TM_RETURN_IF_ERROR(memory->ReleaseGranule(pool.back()));
      pool.pop_back();
      --held;
      ++counters.granules_released;
      released += g;
    }
    return released;
  }

  AllocatorStats Stats() const {
    AllocatorStats st = stats;
    st.bytes_reserved = held * g;
    st.peak_bytes_reserved = peak_held * g;
    st.bytes_limit = params.memory_limit;
    st.free_bytes = st.bytes_reserved > st.bytes_in_use ? st.bytes_reserved - st.bytes_in_use : 0;
    // Whole free granules can back one request of their total size anywhere.
    st.largest_free_block = std::min(st.free_bytes, (cached_pages + pool.size()) * g);
    st.fragmentation = FragmentationMetric(st.largest_free_block, st.free_bytes);
    return st;
  }

  std::string Report(std::size_t max_blocks) const {
    std::ostringstream out;
    const AllocatorStats st = Stats();
    out << "vmm over " << memory->description() << ": limit "
        << (params.memory_limit ? HumanBytes(*params.memory_limit) : std::string("none")) << ", held "
        << HumanBytes(held * g) << " (" << held << " granules: " << (held - cached_pages - pool.size())
        << " backing live blocks, " << cached_pages << " cached, " << pool.size() << " unmapped), in use "
        << HumanBytes(st.bytes_in_use) << " in " << live.size() << " blocks, peak held "
        << HumanBytes(peak_held * g) << "\n";
    for (const Space& s : spaces) {
      if (s.base == nullptr) continue;
      std::uint64_t free_bytes = 0, largest = 0;
      for (const Block* b : s.free_blocks) {
        free_bytes += b->size;
        largest = std::max(largest, b->size);
      }
      out << (s.index == kSmall ? "small" : "large") << " space: " << s.live_blocks << " live blocks, "
          << s.free_blocks.size() << " free blocks (" << HumanBytes(free_bytes) << ", largest "
          << HumanBytes(largest) << "), top at " << HumanBytes(s.top) << "\n";
      std::size_t listed = 0;
      for (const Block* b = s.tail; b != nullptr && listed < max_blocks; b = b->prev, ++listed)
        out << "  " << PointerToString(s.base + b->offset) << " " << b->size << (b->free ? " free" : " used")
            << "\n";
    }
    return out.str();
  }
};

Status Validate(const VmmParams& params) {
  if (!IsPowerOfTwo(params.block_rounding_bytes) || params.block_rounding_bytes < 256 ||
      params.block_rounding_bytes > (std::uint64_t{64} << 10))
    return InvalidArgument("vmm: block_rounding_bytes " + std::to_string(params.block_rounding_bytes) +
                           " is not a power of two between 256 and 65536");
  if (params.memory_limit && *params.memory_limit == 0)
    return InvalidArgument("vmm: memory_limit 0 leaves nothing to allocate");
  if (params.address_space_bytes < (std::uint64_t{1} << 21) ||
      params.address_space_bytes > (std::uint64_t{1} << 46))
    return InvalidArgument("vmm: address_space_bytes " + std::to_string(params.address_space_bytes) +
                           " is not between 2 MiB and 64 TiB");
  if (!(params.growth_slack >= 0.0 && params.growth_slack <= 1.0)) {
    std::ostringstream value;
    value << params.growth_slack;
    return InvalidArgument("vmm: growth_slack " + value.str() + " is not between 0 and 1");
  }
  if (params.small_request_bytes > params.address_space_bytes / 2)
    return InvalidArgument("vmm: small_request_bytes " + std::to_string(params.small_request_bytes) +
                           " is more than half the address space");
  return Status::Ok();
}

Result<std::unique_ptr<VmmAllocator>> VmmAllocator::Create(PhysicalMemory& memory, const VmmParams& params) {
  TM_RETURN_IF_ERROR(Validate(params));
  auto state = std::make_unique<State>();
  State& s = *state;
  s.memory = &memory;
  s.params = params;
  s.g = memory.granularity();
  if (!IsPowerOfTwo(s.g))
    return InvalidArgument("vmm: the physical memory's granularity " + std::to_string(s.g) +
                           " is not a power of two");
  if (params.block_rounding_bytes > s.g)
    return InvalidArgument("vmm: block_rounding_bytes " + std::to_string(params.block_rounding_bytes) +
                           " is more than the granularity " + std::to_string(s.g));
  if (params.memory_limit && *params.memory_limit < s.g)
    return InvalidArgument("vmm: memory_limit " + std::to_string(*params.memory_limit) +
                           " is less than one granule (" + std::to_string(s.g) + " bytes)");
  s.has_small = params.small_request_bytes > 0;
  for (int i = 0; i < 2; ++i) {
    Space& sp = s.spaces[i];
    sp.index = i;
    if (i == kSmall && !s.has_small) continue;
    // Address space can be scarce (ulimit -v, sanitizers): halve until granted.
    const std::uint64_t asked = RoundUp(params.address_space_bytes, s.g);
    std::uint64_t size = asked;
    Status last = Status::Ok();
    while (size >= s.g && size >= asked / 1024) {
      Result<void*> r = memory.ReserveAddressRange(size);
      if (r.ok()) {
        sp.base = static_cast<char*>(*r);
        sp.size = size;
        break;
      }
      last = r.status();
      size = size / 2 / s.g * s.g;
    }
    if (sp.base == nullptr)
      return ResourceExhausted("vmm: cannot reserve addresses for the " +
                               std::string(i == kSmall ? "small" : "large") + " space: " + last.message());
  }
  return std::unique_ptr<VmmAllocator>(new VmmAllocator(std::move(state)));
}

VmmAllocator::VmmAllocator(std::unique_ptr<State> state) : state_(std::move(state)) {}

VmmAllocator::~VmmAllocator() {
  State& s = *state_;
  (void)s.memory->Synchronize();
  for (Space& sp : s.spaces) {
    if (sp.base == nullptr) continue;
    for (std::uint64_t i = 0; i < sp.pages.size(); ++i) {
      if (!sp.pages[i].mapped) continue;
      (void)s.memory->Unmap(sp.base + i * s.g, 1);
      s.pool.push_back(sp.pages[i].granule);
    }
    (void)s.memory->FreeAddressRange(sp.base, sp.size);
  }
  for (GranuleHandle h : s.pool) (void)s.memory->ReleaseGranule(h);
  for (auto& [event, refs] : s.event_refs) s.memory->DestroyEvent(event);
  if (s.fence_pending) s.memory->DestroyEvent(s.fence);
}

Result<void*> VmmAllocator::AllocateAsync(std::uint64_t bytes, StreamHandle stream, std::uint64_t alignment) {
  TM_RETURN_IF_ERROR(ValidateAlignment(alignment, "vmm", kMaxAllocationAlignment));
  if (bytes > (std::uint64_t{1} << 62))
    return ResourceExhausted("vmm: cannot allocate " + std::to_string(bytes) + " bytes (more than 2^62)");
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->Allocate(bytes == 0 ? 1 : bytes, alignment, stream);
}

Status VmmAllocator::DeallocateAsync(void* pointer, StreamHandle stream) {
  if (pointer == nullptr) return Status::Ok();
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->Deallocate(pointer, stream);
}

Result<void*> VmmAllocator::DoAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->Allocate(bytes, alignment, 0);
}

Status VmmAllocator::DoDeallocate(void* pointer) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->Deallocate(pointer, 0);
}

AllocatorStats VmmAllocator::DoGetStats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->Stats();
}

Result<std::uint64_t> VmmAllocator::ReleaseCachedMemory() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->ReleaseCached();
}

std::string VmmAllocator::MemoryReport(std::size_t max_blocks) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->Report(max_blocks);
}

VmmAllocator::Counters VmmAllocator::counters() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->counters;
}

const VmmParams& VmmAllocator::params() const { return state_->params; }
std::uint64_t VmmAllocator::granularity() const { return state_->g; }

}  // namespace tensormem
