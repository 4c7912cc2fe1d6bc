// SPDX-License-Identifier: Apache-2.0
// The vmm allocator (see vmm_allocator.h for the policy, vmm_state.h for
// how the files that implement it fit): the public calls, each under the
// one lock, Validate and Create (which reserves the two address spaces),
// the statistics and the memory report.
// Until they move to the files vmm_state.h names, also:
// - frees, streams and events
#include "tensormem/allocators/vmm_allocator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <sstream>
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
  s.free_blocks.emplace(b);
  return Status::Ok();
}

// The free block b merged with its free neighbours where their tags allow
// (out of the free set); returns the block that remains.
Block* VmmState::MergeWithNeighbours(Space& s, Block* b) {
  if (b->prev && b->prev->free && Mergeable(b->prev, b)) {
    Block* a = b->prev;
    s.free_blocks.erase(FreeKey(a));
    MergeInto(a, b);
    if (s.tail == b) s.tail = a;
    b = a;
  }
  if (b->next && b->next->free && Mergeable(b, b->next)) {
    Block* c = b->next;
    s.free_blocks.erase(FreeKey(c));
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


AllocatorStats VmmState::Stats() const {
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

std::string VmmState::Report(std::size_t max_blocks) const {
  std::ostringstream out;
  const AllocatorStats st = Stats();
  out << "vmm over " << memory->description() << ": limit "
      << (params.memory_limit ? HumanBytes(*params.memory_limit) : std::string("none")) << ", held "
      << HumanBytes(held * g) << " (" << held << " granules: " << (held - cached_pages - pool.size())
      << " backing live blocks, " << cached_pages << " cached, " << pool.size() << " unmapped), in use "
      << HumanBytes(st.bytes_in_use) << " in " << live.size() + deferred.size() << " blocks";
  if (!deferred.empty())
    out << " (" << deferred.size() << " of them, " << HumanBytes(deferred_bytes)
        << ", freed and waiting for other streams' work: record_stream)";
  out << ", peak held " << HumanBytes(peak_held * g) << "\n";
  for (const Space& s : spaces) {
    if (s.base == nullptr) continue;
    std::uint64_t free_bytes = 0, largest = 0;
    for (const FreeKey& k : s.free_blocks) {
      free_bytes += k.size;
      largest = std::max(largest, k.size);
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

}  // namespace vmm

using vmm::kSmall;
using vmm::Page;
using vmm::RoundUp;
using vmm::Space;

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
  if (params.max_handle_granules < 1 || params.max_handle_granules > (std::uint64_t{1} << 20))
    return InvalidArgument("vmm: max_handle_granules " + std::to_string(params.max_handle_granules) +
                           " is not between 1 and 2^20");
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

namespace {

// Reserves the addresses of a space: `asked` bytes, halved until the system
// grants them (address space can be scarce: ulimit -v, sanitizers), down to
// 1/1024 of it.
Status ReserveSpace(PhysicalMemory& memory, std::uint64_t asked, std::uint64_t g, Space& sp) {
  std::uint64_t size = asked;
  Status last = Status::Ok();
  while (size >= g && size >= asked / 1024) {
    Result<void*> r = memory.ReserveAddressRange(size);
    if (r.ok()) {
      sp.base = static_cast<char*>(*r);
      sp.size = size;
      return Status::Ok();
    }
    last = r.status();
    size = size / 2 / g * g;
  }
  return ResourceExhausted("vmm: cannot reserve addresses for the " +
                           std::string(sp.index == kSmall ? "small" : "large") + " space: " + last.message());
}

}  // namespace

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
  s.g_shift = std::countr_zero(s.g);
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
    TM_RETURN_IF_ERROR(ReserveSpace(memory, RoundUp(params.address_space_bytes, s.g), s.g, sp));
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
      const Page& p = sp.pages[i];
      if (!p.mapped || p.head_offset != 0) continue;  // a run handle goes with its first page
      (void)s.memory->Unmap(sp.base + i * s.g, 1, p.handle_pages);
      if (p.handle_pages == 1)
        s.pool.push_back(p.granule);
      else
        (void)s.memory->ReleaseGranule(p.granule, p.handle_pages);
    }
    (void)s.memory->FreeAddressRange(sp.base, sp.size);
  }
  for (GranuleHandle h : s.pool) (void)s.memory->ReleaseGranule(h);
  for (auto& [event, refs] : s.event_refs) s.memory->DestroyEvent(event);
}

Result<void*> VmmAllocator::AllocateAsync(std::uint64_t bytes, StreamHandle stream, std::uint64_t alignment) {
  TM_RETURN_IF_ERROR(ValidateAlignment(alignment, "vmm", kMaxAllocationAlignment));
  if (bytes > (std::uint64_t{1} << 62))
    return ResourceExhausted("vmm: cannot allocate " + std::to_string(bytes) + " bytes (more than 2^62)");
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Allocate(bytes == 0 ? 1 : bytes, alignment, stream);
}

Status VmmAllocator::DeallocateAsync(void* pointer, StreamHandle stream) {
  if (pointer == nullptr) return Status::Ok();
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Deallocate(pointer, stream);
}

Status VmmAllocator::RecordStream(void* pointer, StreamHandle stream) {
  if (pointer == nullptr) return InvalidArgument("vmm: record_stream of a null pointer");
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->RecordStream(pointer, stream);
}

bool VmmAllocator::Owns(const void* pointer) const { return state_->Owns(pointer); }

Result<void*> VmmAllocator::DoAllocate(std::uint64_t bytes, std::uint64_t alignment) {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Allocate(bytes, alignment, 0);
}

Status VmmAllocator::DoDeallocate(void* pointer) {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Deallocate(pointer, 0);
}

AllocatorStats VmmAllocator::DoGetStats() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Stats();
}

Result<std::uint64_t> VmmAllocator::ReleaseCachedMemory() {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->ReleaseCached();
}

std::string VmmAllocator::MemoryReport(std::size_t max_blocks) const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->Report(max_blocks);
}

VmmAllocator::Counters VmmAllocator::counters() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->counters;
}

VmmParams VmmAllocator::params() const {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  return state_->params;
}

Status VmmAllocator::SetMemoryLimit(std::optional<std::uint64_t> limit) {
  std::lock_guard<internal::AdaptiveMutex> lock(state_->mutex);
  if (limit && *limit < state_->g)
    return InvalidArgument("vmm: memory limit " + std::to_string(*limit) + " is less than one granule (" +
                           std::to_string(state_->g) + " bytes)");
  state_->params.memory_limit = limit;
  return Status::Ok();
}
std::uint64_t VmmAllocator::granularity() const { return state_->g; }

}  // namespace tensormem
