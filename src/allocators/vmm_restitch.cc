// SPDX-License-Identifier: Apache-2.0
// The vmm allocator's granules for pages to map (see vmm_state.h for the
// whole): from the pool (held, unmapped), from cached pages unmapped and
// re-stitched, and new ones within the limit, in the order
// `restitch_before_growing` and `growth_slack` set (vmm_allocator.h).
// - Device safety: a cached page may still be in use by work queued before
//   its free. Pages are numbered by when they were cached; a fence (an
//   event recorded at a free that cached pages) makes the pages cached up
//   to it safe once it completes, and a Synchronize makes every page cached
//   so far safe, so a re-stitch waits only when the pages it could take
//   were cached after the last of those.
// - A run handle moves only whole, once no live block is on any of its
//   pages: mapped whole where a run of its very size needs pages, or
//   released and its granules created again.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "allocators/vmm_state.h"

namespace tensormem {
namespace vmm {

// Backs `count` pages being mapped (already touched, so not in the list):
// single granules from the pool and from re-stitched cached pages go to
// `out`; `reserved` counts new granules the caller creates (one handle
// per run of pages, see TouchAndMap), already counted as held. With
// `allow_create` false only the pool and the cache serve. All or
// nothing: on failure the singles go back to the pool and nothing stays
// reserved. With `moved`, a free run handle re-stitched whole (all its
// granules needed) is unmapped but kept, for the caller to map whole in a
// run of pages (an unmap and a map, not also a release and a create); it
// counts as reserved, and the caller releases what it does not use.
Status VmmState::AcquireGranules(std::size_t count, std::vector<GranuleHandle>& out, std::size_t& reserved,
                                 bool allow_create, std::vector<MovedHandle>* moved) {
  const std::size_t from_pool = std::min(count, pool.size());
  Acquisition a{count - from_pool, out, reserved, allow_create, moved, out.size(), reserved,
                moved ? moved->size() : 0};
  out.insert(out.end(), pool.end() - static_cast<std::ptrdiff_t>(from_pool), pool.end());
  pool.resize(pool.size() - from_pool);
  const Status st = FindGranules(a);
  if (st.ok() && a.need == 0) return Status::Ok();
  UndoAcquisition(a);
  if (!st.ok()) return st;
  std::string why = "needs " + std::to_string(a.need) + " more granule(s) of " + HumanBytes(g);
  if (params.memory_limit) why += "; the limit is " + HumanBytes(*params.memory_limit);
  return ResourceExhausted(why);
}

// The pool and new granules first or the cache first, by
// params.restitch_before_growing; Ok with a.need > 0 when nothing more
// was found.
Status VmmState::FindGranules(Acquisition& a) {
  if (!params.restitch_before_growing) {
    ReserveNew(a, a.need);
    return Restitch(a, true);
  }
  // Growth within the slack over the most pages ever touched at once
  // costs one create; a re-stitch costs an unmap and a map, and in a
  // steady state would repeat every iteration.
  const double cap = std::floor(double(peak_touched) * (1.0 + params.growth_slack));
  if (cap > double(held)) ReserveNew(a, std::min<std::uint64_t>(a.need, std::uint64_t(cap - double(held))));
  TM_RETURN_IF_ERROR(Restitch(a, false));  // pages safe without waiting for the device
  // Memory first: where the device is behind (a GPU runs its queue after
  // the host frees), the pages it still uses are waited for rather than
  // grown past: under a lag of 200 trace events gpt2_train_varlen held
  // 1.070x its peak in use when growing first, as the plug-in did on an
  // H200 (1.0685x).
  if (a.need > 0) TM_RETURN_IF_ERROR(WaitForFencesAndRestitch(a));
  if (a.need > 0) TM_RETURN_IF_ERROR(Restitch(a, true));
  ReserveNew(a, a.need);
  return Status::Ok();
}

// Counts up to `want` new granules within the limit as held and reserved
// (the caller creates them).
void VmmState::ReserveNew(Acquisition& a, std::size_t want) {
  if (want == 0 || !a.allow_create) return;
  const std::uint64_t allowed = WithinLimit(want);
  held += allowed;
  a.reserved += allowed;
  a.need -= allowed;
}

// Cached pages the device is done with; when they do not suffice and
// `may_wait`, a Synchronize and again (waiting helps only where a cached
// page that is not safe yet could then be taken).
Status VmmState::Restitch(Acquisition& a, bool may_wait) {
  PollFence();
  for (int round = 0; round < 2 && a.need > 0; ++round) {
    if (round == 1) {
      if (!may_wait || OldestTakeableUnsafe() == 0) break;
      TM_RETURN_IF_ERROR(memory->Synchronize());
      ++counters.synchronizations;
      safe_seq = cache_seq;
    }
    TM_RETURN_IF_ERROR(TakeSafePages(a));
  }
  return Status::Ok();
}

// Pages cached after safe_seq (still in use by the device) are the
// newest: a suffix of the list. Its first page; kNoPage: none.
PageId VmmState::FirstUnsafePage() const {
  PageId unsafe = kNoPage;
  for (PageId id = lru_tail; id != kNoPage && PageAt(id).cached_seq > safe_seq; id = PageAt(id).lru_prev)
    unsafe = id;
  return unsafe;
}

// The newest cached page older than `unsafe` (kNoPage: the newest of all).
PageId VmmState::NewestBelow(PageId unsafe) const { return unsafe == kNoPage ? lru_tail : PageAt(unsafe).lru_prev; }

// Takes the newest cached page that needs no wait for the device and the
// cached pages right above it that need none either (one unmap call for
// the run), then older ones, until enough. Newest first, as a cache under
// a loop evicts: the page cached longest ago is the one the next iteration
// of a training step reaches soonest, so taking the oldest moved most
// pages again in every step (17,522 of 19,661 per pass on
// transformer_ctx128_fullstep; 1,062 newest first). A run handle moves
// only whole, once no live block is on any of its pages (TakeRunHandle).
// With protect_refaulted, protected pages are passed over first and taken
// only if the others do not suffice.
Status VmmState::TakeSafePages(Acquisition& a) {
  const PageId unsafe = FirstUnsafePage();
  if (params.protect_refaulted) TM_RETURN_IF_ERROR(TakeSafePagesOnce(a, unsafe, true));
  return TakeSafePagesOnce(a, unsafe, false);
}

// One walk of TakeSafePages, from the newest page cached before `unsafe`.
Status VmmState::TakeSafePagesOnce(Acquisition& a, PageId unsafe, bool pass_protected) {
  PageId id = NewestBelow(unsafe);
  while (a.need > 0 && id != kNoPage) {
    Space& s = spaces[SpaceIndexOf(id)];
    const std::uint64_t i = PageIndexOf(id);
    const std::uint64_t head = i - s.pages[i].head_offset;
    const PageId older = s.pages[i].lru_prev;
    // Passed over: protected, or a run handle a live block is on.
    if ((pass_protected && Protected(s.pages[i])) ||
        (s.pages[head].handle_pages > 1 && !RunHandleFree(s, head, true))) {
      id = older;
      continue;
    }
    if (const std::uint64_t n = s.pages[head].handle_pages; n > 1) {
      TM_RETURN_IF_ERROR(TakeRunHandle(a, s, head));
      for (std::uint64_t k = head; k < head + n; ++k) s.pages[k].taken_seq = cache_seq + 1;
    } else {
      TM_RETURN_IF_ERROR(TakeSingles(a, s, i));
    }
    // Go on from the next older page, unless it was just taken.
    id = older != kNoPage && PageAt(older).mapped && PageAt(older).touch == 0 ? older : NewestBelow(unsafe);
  }
  return Status::Ok();
}

// A free run handle: unmapped and kept for the caller to map whole (see
// Acquisition::moved), or released and its granules created again where
// needed (by the caller, or here when it may not create).
Status VmmState::TakeRunHandle(Acquisition& a, Space& s, std::uint64_t head) {
  const std::uint64_t n = s.pages[head].handle_pages;
  const std::uint64_t again = std::min<std::uint64_t>(n, a.need);
  if (a.allow_create) {
    if (a.moved != nullptr && again == n) {  // stays held, for the caller to map whole
      TM_ASSIGN_OR_RETURN(const MovedHandle h, UnmapRunHandle(s, head));
      a.moved->push_back(h);
    } else {
      TM_RETURN_IF_ERROR(ReleaseRunHandle(s, head).status());
      held += again;  // created by the caller, in runs
    }
    a.reserved += again;
    a.need -= again;
    counters.pages_restitched += again;
    return Status::Ok();
  }
  TM_RETURN_IF_ERROR(ReleaseRunHandle(s, head).status());
  if (memory->CreateGranules(again, a.out).ok()) {
    // New granules were refused: the memory just given back is taken
    // again at once, as single granules.
    held += again;
    a.need -= again;
    counters.granules_created += again;
    counters.handles_created += again;
    counters.pages_restitched += again;
  }
  return Status::Ok();
}

// Page i (a single granule) and the safe single-granule pages right above
// it, up to what is needed: unmapped with one call, their granules to a.out.
Status VmmState::TakeSingles(Acquisition& a, Space& s, std::uint64_t i) {
  std::uint64_t end = i + 1;
  while (end - i < a.need && end < s.pages.size() && s.pages[end].mapped && s.pages[end].touch == 0 &&
         s.pages[end].cached_seq <= safe_seq && s.pages[end].handle_pages == 1 && s.pages[end].head_offset == 0)
    ++end;
  TM_RETURN_IF_ERROR(memory->Unmap(s.base + i * g, end - i));
  counters.handles_unmapped += end - i;
  for (std::uint64_t k = i; k < end; ++k) {
    LruRemove(MakePageId(s.index, k));
    s.pages[k].mapped = false;
    s.pages[k].taken_seq = cache_seq + 1;
    a.out.push_back(s.pages[k].granule);
  }
  counters.pages_unmapped += end - i;
  counters.pages_restitched += end - i;
  a.need -= end - i;
  return Status::Ok();
}

// Pages cached up to a pending fence become safe once it completes:
// waiting for it costs less than a Synchronize (the device need not
// finish what was queued since, on any stream). The fences in order, up
// to the first that covers the oldest page that could then be taken.
Status VmmState::WaitForFencesAndRestitch(Acquisition& a) {
  PollFence();
  while (a.need > 0 && !fences.empty()) {
    const std::uint64_t oldest = OldestTakeableUnsafe();
    if (oldest == 0 || oldest > fences.back().first) break;
    while (!fences.empty() && safe_seq < oldest) {
      TM_RETURN_IF_ERROR(memory->WaitForEvent(fences.front().second));
      ++counters.event_waits;
      safe_seq = std::max(safe_seq, fences.front().first);
      UnrefEvent(fences.front().second);
      fences.pop_front();
      PollFence();
    }
    TM_RETURN_IF_ERROR(Restitch(a, false));
  }
  return Status::Ok();
}

// All or nothing: the singles found go back to the pool, the handles kept
// whole back to the device, and nothing stays reserved.
void VmmState::UndoAcquisition(Acquisition& a) {
  pool.insert(pool.end(), a.out.begin() + static_cast<std::ptrdiff_t>(a.out_before), a.out.end());
  a.out.resize(a.out_before);
  // Handles kept whole go back to the device: `held` counted them as reserved.
  if (a.moved != nullptr) {
    (void)ReleaseHandles(std::span<const MovedHandle>(*a.moved).subspan(a.moved_before));
    a.moved->resize(a.moved_before);
  }
  held -= a.reserved - a.reserved_before;
  a.reserved = a.reserved_before;
}

// The oldest cached page the device may still use (cached after
// safe_seq) that could be taken once it is done with it: a single
// granule, or a run handle no live block is on. Its cached_seq; 0: none.
std::uint64_t VmmState::OldestTakeableUnsafe() {
  std::uint64_t oldest = 0;
  for (std::uint64_t id = lru_tail; id != kNoPage && PageAt(id).cached_seq > safe_seq; id = PageAt(id).lru_prev) {
    const Space& s = spaces[SpaceIndexOf(id)];
    const std::uint64_t i = PageIndexOf(id);
    const std::uint64_t head = i - s.pages[i].head_offset;
    if (s.pages[head].handle_pages == 1 || RunHandleFree(s, head, false)) oldest = PageAt(id).cached_seq;
  }
  return oldest;
}

// Drops the fences that have completed: the pages cached up to them are safe.
void VmmState::PollFence() {
  while (!fences.empty() && memory->EventCompleted(fences.front().second)) {
    safe_seq = std::max(safe_seq, fences.front().first);
    UnrefEvent(fences.front().second);
    fences.pop_front();
  }
}

// After a free that cached pages (`event`: the free's own, several
// streams only).
Status VmmState::RecordFence(StreamHandle stream, EventHandle event) {
  PollFence();
  if (!multi_stream) {
    if (cache_seq == safe_seq || fences.size() >= kMaxFences) return Status::Ok();
    TM_ASSIGN_OR_RETURN(event, memory->RecordEvent(stream));
    ++counters.events_recorded;
  }
  RefEvent(event);
  fences.emplace_back(cache_seq, event);
  PollFence();  // an event 0 (nothing in flight) is complete at once
  return Status::Ok();
}

}  // namespace vmm
}  // namespace tensormem
