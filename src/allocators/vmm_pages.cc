// SPDX-License-Identifier: Apache-2.0
// The vmm allocator's pages (see vmm_state.h for the whole).
// - Per space, one Page per granule of addresses below the high-water mark:
//   the granule mapped there (if any) and how many live blocks touch it.
//   Mapped pages no live block touches are "cached" and sit in one list
//   shared by both spaces, in the order they were cached (re-stitching,
//   vmm_restitch.cc, takes the newest that needs no wait).
// - A new block touches its pages and maps those not mapped, on granules
//   from AcquireGranules and new ones: a handle per run of up to
//   `max_handle_granules` consecutive pages, one create and one map call
//   each. Such a run handle moves only whole.
// - ReleaseCached (empty_cache) unmaps the cache and gives back every
//   granule no live block needs.
#include <algorithm>
#include <cstdint>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "allocators/vmm_state.h"

namespace tensormem {
namespace vmm {

// Touches the pages of [offset, offset + size) of s and maps those not
// mapped: single granules (pool, re-stitched) on the first of them, new
// granules on the rest, a handle per run of up to `max_handle_granules`
// consecutive pages (one create and one map call each), and with
// `ahead`, pages above a block that grows the space (CreateAhead). On
// failure nothing is touched and nothing leaks; pages created ahead never
// cause one (a refusal is tried again without them).
Status VmmState::TouchAndMap(Space& s, std::uint64_t offset, std::uint64_t size, bool ahead_allowed) {
  const std::uint64_t first = offset >> g_shift, last = (offset + size - 1) >> g_shift;
  TM_RETURN_IF_ERROR(RefuseBeyondLimit(s, first, last));
  TM_RETURN_IF_ERROR(EnsurePages(s, offset + size));
  std::vector<std::uint64_t> todo = TouchPages(s, first, last);  // the pages to map, in address order
  if (todo.empty()) return Status::Ok();
  std::vector<GranuleHandle> singles;
  singles.reserve(todo.size());
  std::size_t reserved = 0;
  std::vector<MovedHandle> moved;
  if (Status st = AcquireGranules(todo.size(), singles, reserved, true, &moved); !st.ok()) {
    Untouch(s, offset, size);
    return st;
  }
  const std::size_t ahead = ahead_allowed ? CreateAhead(s, offset + size, todo, reserved) : 0;
  std::vector<Backing> back(todo.size());
  for (std::size_t k = 0; k < singles.size(); ++k) back[k] = {singles[k], 1, true};
  PlaceMovedHandles(todo, back, singles.size(), moved);
  (void)ReleaseHandles(moved);  // still counted in `held`: created below instead
  Status st = BackTheRest(todo, back, singles.size());
  std::size_t mapped_upto = 0;  // back[0, mapped_upto) are mapped
  if (st.ok()) st = MapBacked(s, todo, back, mapped_upto);
  for (std::size_t k = todo.size() - ahead; k < mapped_upto; ++k)  // mapped, touched by no block: cached
    LruPushBack(MakePageId(s.index, todo[k]));
  if (!st.ok()) {
    ReturnUnmapped(back, mapped_upto);
    Untouch(s, offset, size);
    if (ahead > 0 && st.code() == StatusCode::kResourceExhausted) return TouchAndMap(s, offset, size, false);
  }
  peak_held = std::max(peak_held, held);
  return st;
}

// `grow_ahead`: a block above the space's top (growing it) whose last pages
// are new granules also gets the pages after it, up to the end of its last
// run handle and at most grow_ahead of the granules held. They are created
// and mapped with its pages (the same calls) and stay cached at the top,
// where the next block placed finds them mapped: a growing heap makes a
// create and a map call per run handle rather than per block. Appends them
// to `todo`, counts them in `held`, and returns how many.
std::size_t VmmState::CreateAhead(Space& s, std::uint64_t end, std::vector<std::uint64_t>& todo,
                                  std::size_t reserved) {
  if (reserved == 0 || end <= s.top || todo.empty()) return 0;  // nothing created, or not growing
  std::size_t run = 1;  // the consecutive new pages that end todo
  while (run < reserved && todo[todo.size() - run - 1] + 1 == todo[todo.size() - run]) ++run;
  const std::uint64_t m = params.max_handle_granules, last = todo.back();
  std::uint64_t want = (m - run % m) % m;
  want = std::min<std::uint64_t>(want, static_cast<std::uint64_t>(static_cast<double>(held) * params.grow_ahead));
  want = WithinLimit(std::min<std::uint64_t>(want, s.size / g - (last + 1)));
  if (want == 0 || !EnsurePages(s, (last + 1 + want) << g_shift).ok()) return 0;
  std::size_t n = 0;
  for (; n < want && !s.pages[last + 1 + n].mapped; ++n) todo.push_back(last + 1 + n);
  held += n;
  return n;
}

// Pages past the table have never been mapped: each needs a granule of
// its own. More of them than the limit (or what is held, above a lowered
// limit) can ever be served is refused before anything grows.
Status VmmState::RefuseBeyondLimit(const Space& s, std::uint64_t first, std::uint64_t last) const {
  if (!params.memory_limit) return Status::Ok();
  const std::uint64_t beyond =
      last + 1 - std::max<std::uint64_t>(first, std::min<std::uint64_t>(last + 1, s.pages.size()));
  const std::uint64_t most = std::max<std::uint64_t>(*params.memory_limit >> g_shift, held);
  if (beyond > most)
    return ResourceExhausted("needs " + std::to_string(beyond) + " new granule(s) of " + HumanBytes(g) +
                             ", more than the limit of " + HumanBytes(*params.memory_limit) + " allows");
  return Status::Ok();
}

// Grows the page table to cover [0, end_offset): one Page per granule of
// addresses, so a huge request with small granules asks for a huge table
// (TouchAndMap refuses those a limit cannot serve before it gets here).
Status VmmState::EnsurePages(Space& s, std::uint64_t end_offset) {
  const std::uint64_t n = RoundUp(end_offset, g) >> g_shift;
  if (s.pages.size() >= n) return Status::Ok();
  if (!s.pages.Grow(n, s.size / g))
    return ResourceExhausted("no host memory for a page table of " + std::to_string(n) + " pages (" +
                             HumanBytes(n * sizeof(Page)) + ")");
  return Status::Ok();
}

// Touches pages first..last (a cached one leaves the cache); returns those
// not mapped, in address order.
std::vector<std::uint64_t> VmmState::TouchPages(Space& s, std::uint64_t first, std::uint64_t last) {
  std::vector<std::uint64_t> todo;
  for (std::uint64_t i = first; i <= last; ++i) {
    Page& p = s.pages[i];
    if (p.touch++ == 0) {
      ++touched;
      if (p.mapped) LruRemove(MakePageId(s.index, i));
    }
    if (!p.mapped) {
      if (p.taken_seq != 0) {  // a refault (VmmParams::protect_refaulted)
        p.refault_distance = cache_seq + 1 - p.taken_seq;
        p.taken_seq = 0;
      }
      todo.push_back(i);
    }
  }
  peak_touched = std::max(peak_touched, touched);
  return todo;
}

// The end of the handle that starts at todo[k]: consecutive pages not yet
// backed, up to max_handle_granules.
std::size_t VmmState::HandleEnd(const std::vector<std::uint64_t>& todo, const std::vector<Backing>& back,
                                std::size_t k) const {
  std::size_t j = k + 1;
  while (j - k < params.max_handle_granules && j < todo.size() && todo[j] == todo[j - 1] + 1 && !back[j].set)
    ++j;
  return j;
}

// Run handles moved whole first, each where the pages from `from` on are
// cut into a handle of its very size (as they would be for new granules,
// so the map calls stay the same and a create and a release are saved; a
// handle on part of a run would cut the rest into more map calls: on
// transformer_ctx128_fullstep 2,518 -> 3,047 a cold pass). Those no run
// takes stay in `moved`.
void VmmState::PlaceMovedHandles(const std::vector<std::uint64_t>& todo, std::vector<Backing>& back,
                                 std::size_t from, std::vector<MovedHandle>& moved) {
  for (std::size_t k = from; k < todo.size() && !moved.empty();) {
    const std::size_t j = HandleEnd(todo, back, k);
    auto fits = std::find_if(moved.begin(), moved.end(), [&](const MovedHandle& h) { return h.pages == j - k; });
    if (fits == moved.end()) {
      k = j;
      continue;
    }
    back[k] = {fits->handle, fits->pages, true};
    for (std::size_t m = k + 1; m < k + fits->pages; ++m) back[m] = {fits->handle, 0, true};
    ++counters.handles_moved;
    k += fits->pages;
    moved.erase(fits);
  }
}

// New granules for the pages from `from` on not backed yet: a handle per
// run (one granule a page where the device refuses a large one); what the
// device does not grant at all comes from the cache.
Status VmmState::BackTheRest(const std::vector<std::uint64_t>& todo, std::vector<Backing>& back,
                             std::size_t from) {
  Status refused = Status::Ok();
  const std::size_t uncovered = CreateHandles(todo, back, from, refused);
  if (uncovered == 0) return Status::Ok();
  held -= uncovered;
  std::vector<GranuleHandle> more;
  std::size_t none = 0;
  Status st = AcquireGranules(uncovered, more, none, false);
  if (st.code() == StatusCode::kResourceExhausted)
    return ResourceExhausted(st.message() + "; the device refused: " + refused.message());
  TM_RETURN_IF_ERROR(st);
  std::size_t next = 0;
  for (Backing& b : back)
    if (!b.set) b = {more[next++], 1, true};
  return Status::Ok();
}

// Creates the handles of BackTheRest; returns how many pages the device
// refused a granule (`refused`: its last answer).
std::size_t VmmState::CreateHandles(const std::vector<std::uint64_t>& todo, std::vector<Backing>& back,
                                    std::size_t from, Status& refused) {
  std::size_t uncovered = 0;
  for (std::size_t k = from; k < todo.size();) {
    if (back[k].set) {
      ++k;
      continue;
    }
    const std::size_t j = HandleEnd(todo, back, k);
    std::vector<GranuleHandle> h;
    if (j - k > 1 && memory->CreateGranules(1, h, j - k).ok()) {
      back[k] = {h[0], j - k, true};
      for (std::size_t m = k + 1; m < j; ++m) back[m] = {h[0], 0, true};
      counters.granules_created += j - k;
      ++counters.handles_created;
    } else {
      // One granule a page: the device may grant fewer, or no large one.
      for (std::size_t m = k; m < j; ++m) {
        h.clear();
        if (Status st = memory->CreateGranules(1, h); st.ok()) {
          back[m] = {h[0], 1, true};
          ++counters.granules_created;
          ++counters.handles_created;
        } else {
          refused = st;
          ++uncovered;
        }
      }
    }
    k = j;
  }
  return uncovered;
}

// Maps the backed pages: a run of pages on single granules with one call,
// and run handles of one size on consecutive pages with one call too (a
// GPU still maps each handle, but sets access once for all of them; the
// host maps handles whose granules are consecutive with one mmap).
Status VmmState::MapBacked(Space& s, const std::vector<std::uint64_t>& todo, const std::vector<Backing>& back,
                           std::size_t& mapped_upto) {
  std::vector<GranuleHandle> run;
  for (std::size_t k = 0; k < todo.size();) {
    std::size_t j = k + 1;
    const std::uint64_t n = back[k].pages;  // 1: singles; more: a run handle's head
    run.assign(1, back[k].handle);
    if (n == 1) {
      while (j < todo.size() && back[j].pages == 1 && todo[j] == todo[j - 1] + 1) run.push_back(back[j++].handle);
    } else {
      j = k + n;
      while (j < todo.size() && back[j].pages == n && todo[j] == todo[j - 1] + 1) {
        run.push_back(back[j].handle);
        j += n;
      }
    }
    TM_RETURN_IF_ERROR(memory->Map(s.base + todo[k] * g, run, n));
    ++counters.map_calls;
    counters.pages_mapped += j - k;
    counters.handles_mapped += run.size();
    for (std::size_t m = k; m < j; ++m) {
      Page& p = s.pages[todo[m]];
      p.mapped = true;
      p.granule = back[m].handle;
      // Singles are runs of one page each; a run handle's pages count from its head.
      const std::uint64_t in_handle = n > 1 ? (m - k) % n : 0;
      p.handle_pages = n > 1 && in_handle == 0 ? static_cast<std::uint32_t>(n) : 1;
      p.head_offset = static_cast<std::uint32_t>(in_handle);
    }
    mapped_upto = j;
    k = j;
  }
  return Status::Ok();
}

// Undo of a TouchAndMap that failed: single granules not mapped go to the
// pool, run handles not mapped back to the device; pages mapped stay
// mapped and become cached when their touch drops back to 0.
void VmmState::ReturnUnmapped(const std::vector<Backing>& back, std::size_t mapped_upto) {
  for (std::size_t k = mapped_upto; k < back.size(); ++k) {
    const Backing& b = back[k];
    if (!b.set || b.pages == 0) continue;
    if (b.pages == 1) {
      pool.push_back(b.handle);
    } else {
      (void)memory->ReleaseGranule(b.handle, b.pages);
      held -= b.pages;
      counters.granules_released += b.pages;
    }
  }
}

// Unmaps a free run handle (still held); returns it.
Result<MovedHandle> VmmState::UnmapRunHandle(Space& s, std::uint64_t head) {
  const MovedHandle moved{s.pages[head].granule, s.pages[head].handle_pages};
  TM_RETURN_IF_ERROR(memory->Unmap(s.base + head * g, 1, moved.pages));
  ++counters.handles_unmapped;
  counters.pages_unmapped += moved.pages;
  for (std::uint64_t k = head; k < head + moved.pages; ++k) {
    LruRemove(MakePageId(s.index, k));
    s.pages[k] = Page{};
  }
  return moved;
}

// Gives unmapped run handles back to the device (`held` is the caller's).
Status VmmState::ReleaseHandles(std::span<const MovedHandle> handles) {
  Status first = Status::Ok();
  for (const MovedHandle& h : handles) {
    if (Status st = memory->ReleaseGranule(h.handle, h.pages); !st.ok()) {
      if (first.ok()) first = st;
      continue;
    }
    counters.granules_released += h.pages;
  }
  return first;
}

// Unmaps a free run handle and gives it back to the device; returns its
// granules (no longer held).
Result<std::uint64_t> VmmState::ReleaseRunHandle(Space& s, std::uint64_t head) {
  TM_ASSIGN_OR_RETURN(const MovedHandle h, UnmapRunHandle(s, head));
  TM_RETURN_IF_ERROR(ReleaseHandles({&h, 1}));
  held -= h.pages;
  return h.pages;
}

// PyTorch's empty_cache (after the deferred frees and the device).
Result<std::uint64_t> VmmState::ReleaseCached() {
  if (!deferred.empty()) TM_RETURN_IF_ERROR(FinishDeferredFrees(true));
  if (cached_pages > 0 || !pool.empty()) {
    TM_RETURN_IF_ERROR(memory->Synchronize());
    ++counters.synchronizations;
    safe_seq = cache_seq;
  }
  std::uint64_t released = 0;
  // Run handles go back whole where no live block is on any of their
  // pages; a run handle partly under a live block stays cached.
  std::vector<std::uint64_t> cached;
  for (std::uint64_t id = lru_head; id != kNoPage; id = PageAt(id).lru_next) cached.push_back(id);
  for (const std::uint64_t id : cached) {
    Space& s = spaces[SpaceIndexOf(id)];
    const std::uint64_t i = PageIndexOf(id);
    Page& p = s.pages[i];
    if (!p.mapped) continue;  // released with its run handle
    const std::uint64_t head = i - p.head_offset;
    if (s.pages[head].handle_pages == 1) {
      TM_RETURN_IF_ERROR(memory->Unmap(s.base + i * g, 1));
      LruRemove(id);
      p.mapped = false;
      ++counters.pages_unmapped;
      ++counters.handles_unmapped;
      pool.push_back(p.granule);
      continue;
    }
    if (!RunHandleFree(s, head, false)) continue;  // after the Synchronize above, all are safe
    TM_ASSIGN_OR_RETURN(const std::uint64_t n, ReleaseRunHandle(s, head));
    released += n * g;
  }
  while (!pool.empty()) {
    TM_RETURN_IF_ERROR(memory->ReleaseGranule(pool.back()));
    pool.pop_back();
    --held;
    ++counters.granules_released;
    released += g;
  }
  return released;
}

}  // namespace vmm
}  // namespace tensormem
