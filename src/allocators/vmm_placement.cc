// SPDX-License-Identifier: Apache-2.0
// The vmm allocator's allocation: where a block goes and how it is cut out
// (see vmm_state.h for the whole).
// - Per space, free blocks sit in a set ordered by (size, offset);
//   addresses at and above `top` belong to no block (the wilderness, where
//   requests no free block fits go). A free block that ends at the top
//   merges into the wilderness.
// - Best fit by pages to map, then by partial end pages no other block
//   shares: every page found mapped is one neither re-stitched nor created.
// - With a small space (small_request_bytes > 0), sub-granule packing: a
//   small request goes first to room on pages that live large blocks touch
//   (the large space, no new page), else to the small space. With one
//   space (the default) best fit already puts small blocks there.
// The block's pages are then touched and mapped (TouchAndMap, vmm_pages.cc).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "allocators/vmm_state.h"

namespace tensormem {
namespace vmm {
namespace {

// The free blocks FindFit and FindTenantFit look at, best fitting first.
constexpr int kCandidates = 8;

}  // namespace

Result<void*> VmmState::Allocate(std::uint64_t bytes, std::uint64_t alignment, StreamHandle stream) {
  if (!deferred.empty()) TM_RETURN_IF_ERROR(FinishDeferredFrees(false));
  Result<void*> p = AllocateOnce(bytes, alignment, stream);
  // Memory that only record_stream's pending frees hold is waited for
  // before the caller hears "out of memory" (PyTorch synchronises its
  // events there too).
  if (!p.ok() && p.status().code() == StatusCode::kResourceExhausted && !deferred.empty()) {
    TM_RETURN_IF_ERROR(FinishDeferredFrees(true));
    p = AllocateOnce(bytes, alignment, stream);
  }
  if (!p.ok() && p.status().code() == StatusCode::kResourceExhausted) ++stats.num_failed_allocs;
  return p;
}

Result<void*> VmmState::AllocateOnce(std::uint64_t bytes, std::uint64_t alignment, StreamHandle stream) {
  TM_RETURN_IF_ERROR(NoteStream(stream));
  const std::uint64_t r = params.block_rounding_bytes;
  const std::uint64_t rounded = RoundUp(bytes, r);
  const std::uint64_t slack = alignment > r ? alignment - r : 0;
  // A plain lambda (no std::function): this runs on every allocation.
  const auto aligned_in = [&](std::uint64_t off, const Space& sp) {
    const auto base = reinterpret_cast<std::uintptr_t>(sp.base);
    return RoundUp(base + off, alignment) - base;
  };
  const Placement placed = Place(rounded + slack, rounded, stream, aligned_in, std::max(alignment, r));
  Space& s = *placed.space;
  Block* fit = placed.fit.block;
  std::uint64_t start = placed.fit.start;
  if (fit == nullptr && !placed.tenant) {  // the wilderness
    if (!WildSettled(s) && s.wild_stream != stream) TM_RETURN_IF_ERROR(SettleWilderness(s));
    start = aligned_in(s.top, s);
    if (start > s.size || rounded > s.size - start)
      return Exhausted(bytes, "the " + SpaceName(s) + "'s " + HumanBytes(s.size) + " of addresses are used up");
  }
  if (Status st = TouchAndMap(s, start, rounded); !st.ok()) {
    if (st.code() == StatusCode::kResourceExhausted) return Exhausted(bytes, st.message());
    return st;
  }
  Block* b = fit != nullptr ? CarveFromFree(s, fit, start, rounded) : CarveFromWilderness(s, start, rounded);
  b->free = false;
  b->settled = true;
  b->stream = stream;
  b->requested = bytes;
  ++s.live_blocks;
  void* p = s.base + b->offset;
  live.Insert(p, b);
  ++stats.num_allocs;
  stats.bytes_in_use += b->size;
  stats.peak_bytes_in_use = std::max(stats.peak_bytes_in_use, stats.bytes_in_use);
  stats.largest_alloc_size = std::max(stats.largest_alloc_size, rounded);
  return p;
}

// Where a new block goes: a small request on a large block's pages where
// it fits there (FindTenantFit), else best fit in its own space.
// `aligned(offset, space)` aligns an offset of that space.
template <typename Aligned>
Placement VmmState::Place(std::uint64_t need, std::uint64_t rounded, StreamHandle stream, const Aligned& aligned,
                          std::uint64_t alignment) {
  Space& s = SpaceOf(rounded);
  if (s.index == kSmall) {
    Space& large = spaces[kLarge];
    const auto in_large = [&](std::uint64_t off) { return aligned(off, large); };
    if (const std::optional<Fit> room = FindTenantFit(large, need, rounded, stream, in_large, alignment))
      return {&large, *room, true};
  }
  const auto in_own = [&](std::uint64_t off) { return aligned(off, s); };
  const Fit fit = FindFit(s, need, rounded, stream, in_own, alignment);
  return {&s, fit, false};
}

// Best fit among the free blocks `stream` may use, placed where it needs
// the fewest pages mapped: among the first kCandidates that fit, at the
// low or the high end of each (a block larger than the request may have
// its mapped pages at either end: a growing request that no longer fits
// where it was lands next to it, on what is still cached), and the
// wilderness. Ties go to the best fit's low end. Every page mapped is
// a page neither re-stitched nor created, so this is what keeps the memory
// held near the pages in use on workloads whose sizes drift.
template <typename Aligned>
Fit VmmState::FindFit(Space& s, std::uint64_t need, std::uint64_t rounded, StreamHandle stream,
                      const Aligned& aligned, std::uint64_t alignment) {
  Fit best;
  std::uint64_t best_cost = ~std::uint64_t{0};
  // Pages to map first; then (the low two bits) partial end pages no
  // other block shares.
  const auto cost_of = [&](std::uint64_t start) {
    return UnmappedPages(s, start, rounded, best_cost / 4 + 1) * 4 + LoneEnds(s, start, rounded);
  };
  const auto consider = [&](Block* b, std::uint64_t start) {
    const std::uint64_t cost = cost_of(start);
    if (cost < best_cost) {
      best = {b, start};
      best_cost = cost;
    }
  };
  const auto base = reinterpret_cast<std::uintptr_t>(s.base);
  int looked = 0;
  for (auto it = s.free_blocks.lower_bound(FreeKey(need, 0));
       it != s.free_blocks.end() && looked < kCandidates && best_cost > 0; ++it) {
    if (!Usable(it->block, stream)) continue;
    ++looked;
    const std::uint64_t low = aligned(it->offset);
    consider(it->block, low);
    const std::uint64_t high = ((base + it->offset + it->size - rounded) & ~(alignment - 1)) - base;
    if (best_cost > 0 && high > low) consider(it->block, high);
  }
  // The wilderness may hold cached pages where a fit would need maps.
  if (best_cost > 0 && aligned(s.top) + rounded <= s.size && (WildSettled(s) || s.wild_stream == stream) &&
      cost_of(aligned(s.top)) < best_cost)
    return {};
  return best;
}

// Sub-granule packing: a small request in the large space, on pages that
// live large blocks touch already (the room after a block's end in its
// last granule, or before one's start in its first), so that it maps no
// page and the small space needs no page for it. The pages' touch counts
// keep them mapped, and their run handles in place, until every block on
// them is free. The best-fitting free blocks (low end, then high end) and
// the wilderness are looked at, as in FindFit; none wholly on touched
// pages: nullopt.
template <typename Aligned>
std::optional<Fit> VmmState::FindTenantFit(Space& s, std::uint64_t need, std::uint64_t rounded,
                                           StreamHandle stream, const Aligned& aligned, std::uint64_t alignment) {
  if (s.live_blocks == 0) return std::nullopt;
  const auto base = reinterpret_cast<std::uintptr_t>(s.base);
  int looked = 0;
  for (auto it = s.free_blocks.lower_bound(FreeKey(need, 0)); it != s.free_blocks.end() && looked < kCandidates;
       ++it) {
    if (!Usable(it->block, stream)) continue;
    ++looked;
    const std::uint64_t low = aligned(it->offset);
    if (AllTouched(s, low, rounded)) return Fit{it->block, low};
    const std::uint64_t high = ((base + it->offset + it->size - rounded) & ~(alignment - 1)) - base;
    if (high > low && AllTouched(s, high, rounded)) return Fit{it->block, high};
  }
  const std::uint64_t top = aligned(s.top);
  if (top + rounded <= s.size && (WildSettled(s) || s.wild_stream == stream) && AllTouched(s, top, rounded))
    return Fit{nullptr, top};
  return std::nullopt;
}

// How many pages of [offset, offset + size) have no granule mapped,
// counting no further than `enough` (a candidate that needs that many
// has lost already). Pages past the space's page table were never mapped:
// counted at once, not one by one (a request of many granules would
// otherwise cost a step per page at every candidate, refused or not).
std::uint64_t VmmState::UnmappedPages(const Space& s, std::uint64_t offset, std::uint64_t size,
                                      std::uint64_t enough) const {
  const std::uint64_t first = offset >> g_shift, last = (offset + size - 1) >> g_shift;
  const std::uint64_t known = std::max(first, std::min<std::uint64_t>(last + 1, s.pages.size()));
  std::uint64_t n = 0;
  for (std::uint64_t i = first; i < known && n < enough; ++i)
    if (!s.pages[i].mapped) ++n;
  return std::min(enough, n + (last + 1 - known));
}

// How many partial end pages of [start, start + size) no live block
// touches (0-2): room that stays unused unless a later block shares it.
std::uint64_t VmmState::LoneEnds(const Space& s, std::uint64_t start, std::uint64_t size) const {
  const std::uint64_t end = start + size;
  const std::uint64_t first = start >> g_shift, last = (end - 1) >> g_shift;
  const auto untouched = [&](std::uint64_t i) { return i >= s.pages.size() || s.pages[i].touch == 0; };
  std::uint64_t n = 0;
  if ((start & (g - 1)) != 0 && untouched(first)) ++n;
  if ((end & (g - 1)) != 0 && (last != first || n == 0) && untouched(last)) ++n;
  return n;
}

// Whether every page of [offset, offset + size) is touched by a live block.
bool VmmState::AllTouched(const Space& s, std::uint64_t offset, std::uint64_t size) const {
  const std::uint64_t first = offset >> g_shift, last = (offset + size - 1) >> g_shift;
  if (last >= s.pages.size()) return false;
  for (std::uint64_t i = first; i <= last; ++i)
    if (s.pages[i].touch == 0) return false;
  return true;
}

// The block at `start` of `rounded` bytes cut out of the free block
// `fit`; what is left on either side stays free, with fit's tag.
Block* VmmState::CarveFromFree(Space& s, Block* fit, std::uint64_t start, std::uint64_t rounded) {
  s.free_blocks.erase(fit->entry);
  Block* b = fit;
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
    front->entry = s.free_blocks.emplace(front).first;
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
    back->entry = s.free_blocks.emplace(back).first;
  }
  UnrefEvent(b->event);
  b->event = 0;
  return b;
}

// A new block at `start` of `rounded` bytes at the top of the space,
// above a free gap (with the wilderness's tag) where alignment skipped one.
Block* VmmState::CarveFromWilderness(Space& s, std::uint64_t start, std::uint64_t rounded) {
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
    gap->entry = s.free_blocks.emplace(gap).first;
  }
  Block* b = NewBlock();
  b->offset = start;
  b->size = rounded;
  b->prev = s.tail;
  if (s.tail) s.tail->next = b;
  s.tail = b;
  s.top = start + rounded;
  return b;
}

Status VmmState::Exhausted(std::uint64_t bytes, const std::string& why) {
  std::string report = Report(params.report_max_blocks);
  if (report.ends_with('\n')) report.pop_back();  // the message's last line, not a blank one after it
  return ResourceExhausted("vmm: out of memory allocating " + std::to_string(bytes) + " bytes (" +
                           HumanBytes(bytes) + "): " + why + "\n" + report);
}

}  // namespace vmm
}  // namespace tensormem
