// SPDX-License-Identifier: Apache-2.0
// The vmm allocator's frees, streams and events (see vmm_state.h for the
// whole).
// - A free untouches the block's pages (those no live block touches join
//   the cache, behind a fence: vmm_restitch.cc) and merges the block with
//   its free neighbours; a block at the top goes back to the wilderness.
// - Streams: a free block is tagged with the stream it was freed on (and,
//   once a second stream has been seen, an event recorded at the free). It
//   is reusable by another stream once settled (its event completed).
// - record_stream: a live block's other streams sit in a side map (empty
//   for one-stream programs, so a free costs one branch more). A free of
//   such a block leaves `live` at once (a second free is an error) but is
//   queued with an event per other stream, and done for real when they have
//   all completed: until then the block is in use as far as every other part
//   knows, which keeps its addresses and pages out of every reuse.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "allocators/vmm_state.h"

namespace tensormem {
namespace vmm {

// A second stream: blocks freed so far on the first one get an event
// recorded now (later than their frees, so it covers them).
Status VmmState::StartMultiStream() {
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
  // The pages cached so far (all by frees on the first stream) are safe
  // once this event completes: it joins the fences.
  if (cache_seq > safe_seq) {
    RefEvent(e);
    fences.emplace_back(cache_seq, e);
  }
  if (e == 0) {  // nothing to wait for: everything freed so far is settled
    safe_seq = cache_seq;
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

// Waits for the wilderness's pending free: its event, or the device
// where it has none.
Status VmmState::SettleWilderness(Space& s) {
  if (s.wild_event != 0) {
    TM_RETURN_IF_ERROR(memory->WaitForEvent(s.wild_event));
    ++counters.event_waits;
  } else {
    TM_RETURN_IF_ERROR(memory->Synchronize());
    ++counters.synchronizations;
    safe_seq = cache_seq;
  }
  UnrefEvent(s.wild_event);
  s.wild_event = 0;
  s.wild_settled = true;
  return Status::Ok();
}

// Why `pointer` is not a live block (`what`: the call, for the message).
Status VmmState::NotLive(const void* pointer, const char* what) const {
  if (Owns(pointer))
    return FailedPrecondition(std::string("vmm: ") + what + " of " + PointerToString(pointer) +
                              ", which is not a live allocation (freed already, or inside a block)");
  return NotFound(std::string("vmm: ") + what + " of " + PointerToString(pointer) +
                  ", which was not allocated by this allocator");
}

Status VmmState::RecordStream(void* pointer, StreamHandle stream) {
  Block* const* found = live.Find(pointer);
  if (found == nullptr) return NotLive(pointer, "record_stream");
  const Block* b = *found;
  if (stream == b->stream) return Status::Ok();  // its own allocation stream
  std::vector<StreamHandle>& uses = stream_uses[b];
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
  return Status::Ok();
}

Status VmmState::Deallocate(void* pointer, StreamHandle stream) {
  Block* const* found = live.Find(pointer);
  if (found == nullptr) return NotLive(pointer, "free");
  Block* b = *found;
  TM_RETURN_IF_ERROR(NoteStream(stream));
  if (!stream_uses.empty()) {
    auto u = stream_uses.find(b);
    if (u != stream_uses.end()) return DeferFree(pointer, b, u, stream);
  }
  TM_ASSIGN_OR_RETURN(const EventHandle event, FreeEvent(stream));  // fails changing nothing
  live.Erase(pointer);
  return Release(pointer, b, stream, event);
}

// A free of a block that other streams use: an event on each of them now;
// the block is released once all have completed.
Status VmmState::DeferFree(void* pointer, Block* block,
                           std::unordered_map<const Block*, std::vector<StreamHandle>>::iterator uses,
                           StreamHandle stream) {
  DeferredFree d{pointer, block, stream, {}};
  for (const StreamHandle other : uses->second) {
    if (other == stream) continue;
    Result<EventHandle> e = memory->RecordEvent(other);
    if (!e.ok()) {
      for (const auto& [other_stream, recorded] : d.events) memory->DestroyEvent(recorded);
      return e.status();
    }
    ++counters.events_recorded;
    if (*e != 0) d.events.emplace_back(other, *e);  // 0: nothing in flight there
  }
  if (d.events.empty()) {  // nothing in flight on the other streams: freed now
    TM_ASSIGN_OR_RETURN(const EventHandle event, FreeEvent(stream));
    stream_uses.erase(uses);
    live.Erase(pointer);
    return Release(d.pointer, d.block, stream, event);
  }
  stream_uses.erase(uses);
  live.Erase(pointer);
  for (const auto& [other, e] : d.events) RefEvent(e);
  ++counters.frees_deferred;
  deferred_bytes += d.block->size;
  deferred.push_back(std::move(d));
  return Status::Ok();
}

// Releases the deferred frees whose events have completed (`wait`: every
// one, waiting for their events), in the order of the frees. Events of one
// stream complete in order, so once one is pending the later ones on that
// stream are not asked: a pass queries about one event per stream.
Status VmmState::FinishDeferredFrees(bool wait) {
  std::size_t kept = 0;
  Status result = Status::Ok();
  std::vector<StreamHandle> pending;  // streams with an event not completed
  for (std::size_t i = 0; i < deferred.size(); ++i) {
    DeferredFree& d = deferred[i];
    bool done = result.ok() && DeferredEventsDone(d, wait, pending, result);
    if (done) {
      // Its owner freed it: where its own event cannot be recorded it
      // stays deferred and is tried again (nothing changed), not leaked.
      Result<EventHandle> event = FreeEvent(d.stream);
      if (!event.ok()) {
        if (result.ok()) result = event.status();
        done = false;
      } else if (Status st = Release(d.pointer, d.block, d.stream, *event); !st.ok() && result.ok()) {
        result = st;
      }
    }
    if (!done) {
      if (kept != i) deferred[kept] = std::move(d);
      ++kept;
      continue;
    }
    for (const auto& [other, e] : d.events) UnrefEvent(e);
    deferred_bytes -= d.block->size;
  }
  deferred.resize(kept);
  return result;
}

// Whether every event of a deferred free has completed (`wait`: waited
// for). A stream found with an event pending joins `pending`; a wait that
// fails goes to `result`.
bool VmmState::DeferredEventsDone(const DeferredFree& d, bool wait, std::vector<StreamHandle>& pending,
                                  Status& result) {
  for (const auto& [other, e] : d.events) {
    if (!wait && std::find(pending.begin(), pending.end(), other) != pending.end()) return false;
    if (memory->EventCompleted(e)) continue;
    if (!wait) {
      pending.push_back(other);
      return false;
    }
    if (Status st = memory->WaitForEvent(e); !st.ok()) {
      result = st;
      return false;
    }
    ++counters.event_waits;
  }
  return true;
}

// A free's event on its stream (0 with one stream: nothing to order).
// Taken before the free changes anything, so that a failure leaves the
// block as it was (live, or deferred).
Result<EventHandle> VmmState::FreeEvent(StreamHandle stream) {
  if (!multi_stream) return EventHandle{0};
  TM_ASSIGN_OR_RETURN(const EventHandle e, memory->RecordEvent(stream));
  ++counters.events_recorded;
  return e;
}

// The free proper of a block already out of `live`, ordered after `event`
// (FreeEvent) on `stream`.
Status VmmState::Release(void* pointer, Block* b, StreamHandle stream, EventHandle event) {
  Space& s = spaces[static_cast<char*>(pointer) >= spaces[kLarge].base &&
                            static_cast<char*>(pointer) < spaces[kLarge].base + spaces[kLarge].size
                        ? kLarge
                        : kSmall];
  --s.live_blocks;
  ++stats.num_frees;
  stats.bytes_in_use -= b->size;
  const std::uint64_t cached_before = cache_seq;
  Untouch(s, b->offset, b->size);
  if (cache_seq != cached_before) TM_RETURN_IF_ERROR(RecordFence(stream, event));
  b->free = true;
  b->settled = multi_stream && event == 0;  // a device with nothing to wait for
  b->stream = stream;
  b->event = event;
  b->event_seq = ++event_seq;
  RefEvent(event);
  b = MergeWithNeighbours(s, b);
  if (b->next == nullptr) return ReturnToWilderness(s, b);
  b->entry = s.free_blocks.emplace(b).first;
  return Status::Ok();
}

// The free block b merged with its free neighbours where their tags allow
// (out of the free set); returns the block that remains.
Block* VmmState::MergeWithNeighbours(Space& s, Block* b) {
  if (b->prev && b->prev->free && Mergeable(b->prev, b)) {
    Block* a = b->prev;
    s.free_blocks.erase(a->entry);
    MergeInto(a, b);
    if (s.tail == b) s.tail = a;
    b = a;
  }
  if (b->next && b->next->free && Mergeable(b, b->next)) {
    Block* c = b->next;
    s.free_blocks.erase(c->entry);
    if (s.tail == c) s.tail = b;
    MergeInto(b, c);
  }
  return b;
}

// Merges free neighbours a (lower) and b (higher) when their tags allow.
bool VmmState::Mergeable(Block* a, Block* b) {
  if (Settled(a) || Settled(b)) return true;
  return a->stream == b->stream;
}

void VmmState::MergeInto(Block* a, Block* b) {  // b (the higher) disappears into a
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

// The free top block b goes back to the wilderness, which takes its tag.
Status VmmState::ReturnToWilderness(Space& s, Block* b) {
  if (!b->settled) {
    // Two streams' pending frees meet: keep both ordered by waiting.
    if (!WildSettled(s) && s.wild_stream != b->stream) TM_RETURN_IF_ERROR(SettleWilderness(s));
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
  return Status::Ok();
}

}  // namespace vmm
}  // namespace tensormem
