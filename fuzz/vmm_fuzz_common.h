// SPDX-License-Identifier: Apache-2.0
// Body of the vmm fuzzer (and of its seeded replay in allocators_test): the
// virtual-memory allocator's stream semantics, which the allocator fuzzer
// (one stream, Allocate and Deallocate) does not reach. Host granules with
// manual events (a device that finishes a stream's work only when told,
// waited for or synchronised, streams independent), parameters from the
// bytes, then in any order: allocations and frees on three streams,
// record_stream, a stream's (or every stream's) work finishing, empty_cache,
// memory limits, reports, and frees and records of what is not live.
//
// Before each free the fuzzer records its own event on the freeing stream
// (and on each stream the block was recorded on): work queued there that
// may still use the block. An allocation may return bytes of that block
// only once that event is done, or, for a plain free, on the freeing
// stream itself (stream order). Every block is aligned, disjoint from the
// live ones and keeps its first and last byte; at the end, after
// empty_cache, nothing is in use and no granule is held.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "allocator_fuzz_common.h"
#include "tensormem/allocators.h"

namespace tensormem::fuzz {

struct VmmLive {
  std::uint64_t bytes;
  std::uint8_t tag;
  StreamHandle stream;
  std::vector<StreamHandle> uses;  // record_stream
};

struct VmmPending {
  std::uintptr_t p;
  std::uint64_t bytes;
  EventHandle event;
  StreamHandle stream;      // where the work is queued
  bool any_stream = false;  // record_stream: not even the freeing stream may reuse it
};

// Returns the allocations that succeeded (0 when the parameters were refused).
inline int FuzzVmmOne(const std::uint8_t* data, std::size_t size) {
  FuzzBytes in{data, size};
  HostPhysicalMemoryParams hp;
  hp.granularity = std::uint64_t{1} << (16 + in.U8() % 6);  // 64 KiB to 2 MiB
  hp.manual_events = true;
  Result<std::unique_ptr<HostPhysicalMemory>> created = HostPhysicalMemory::Create(hp);
  Check(created.ok(), "host physical memory starts");
  HostPhysicalMemory& m = **created;
  VmmParams params;
  params.memory_limit = std::uint64_t{1} << (20 + in.U8() % 9);  // 1 to 256 MiB
  // Half the inputs in one space (the default), half with a small space
  // of 4 KiB to 2 MiB.
  const std::uint8_t small = in.U8();
  params.small_request_bytes = small & 0x80 ? 0 : std::uint64_t{1} << (12 + small % 10);
  params.block_rounding_bytes = std::uint64_t{1} << (in.U8() % 16);  // 256 to 32 KiB valid
  params.address_space_bytes = std::uint64_t{1} << (30 + in.U8() % 6);
  const std::uint8_t flags = in.U8();
  params.restitch_before_growing = flags & 1;
  params.growth_slack = (flags & 2) ? 0.25 : 0.0;
  params.grow_ahead = (flags & 4) ? 1.0 : 0.0;  // every growth fills its run handle, or none
  params.protect_refaulted = flags & 8;
  params.max_handle_granules = 1 + in.U8() % 32;
  Result<std::unique_ptr<VmmAllocator>> made = VmmAllocator::Create(m, params);
  if (!made.ok()) {
    Check(!made.status().message().empty(), "refused parameters are named");
    return 0;
  }
  VmmAllocator& v = **made;

  std::map<std::uintptr_t, VmmLive> live;
  std::vector<std::uintptr_t> freed;
  std::vector<VmmPending> pending;
  std::uint8_t tag = 0;
  int allocations = 0;
  auto prune = [&] {
    std::erase_if(pending, [&](const VmmPending& f) { return m.EventCompleted(f.event); });
  };

  for (int step = 0; step < 250 && in.n > 0; ++step) {
    const std::uint8_t op = in.U8();
    const StreamHandle stream = 1 + in.U8() % 3;
    switch (op % 12) {
      case 0:
      case 1:
      case 2:
      case 3: {
        const std::uint8_t k = in.U8();
        std::uint64_t bytes = k < 160 ? in.U64(2) : k < 240 ? in.U64(3) % (std::uint64_t{4} << 20) : in.Size();
        const std::uint64_t alignment = std::uint64_t{1} << in.U8() % 13;
        const std::uint64_t used = bytes == 0 ? 1 : bytes;
        const std::optional<std::uintptr_t> block =
            CheckedBlock(v.AllocateAsync(bytes, stream, alignment), used, alignment, live);
        if (!block) break;
        const std::uintptr_t p = *block;
        prune();  // done now means done when the allocation returned
        for (const VmmPending& f : pending)
          Check(p + used <= f.p || f.p + f.bytes <= p || (!f.any_stream && f.stream == stream),
                "bytes are not handed out while work queued before their free may still use them");
        TagBlock(p, used, ++tag);
        live[p] = VmmLive{used, tag, stream, {}};
        ++allocations;
        break;
      }
      case 4:
      case 5: {  // free, mostly on the block's own stream
        if (live.empty()) break;
        auto it = live.begin();
        std::advance(it, in.U8() % live.size());
        Check(Intact(it->first, it->second), "a block keeps its bytes until it is freed");
        const StreamHandle on = (op & 0x80) ? stream : it->second.stream;
        auto queue = [&](StreamHandle s, bool any) {
          Result<EventHandle> e = m.RecordEvent(s);
          Check(e.ok(), "the host records events");
          pending.push_back({it->first, it->second.bytes, *e, s, any});
        };
        if (on != it->second.stream) {
          // A free on another stream than the allocation's: the caller
          // vouches that the block's work there is ordered before this
          // point of `on`, and with it the work of the block's earlier
          // lives on that stream (which preceded its allocation there).
          std::erase_if(pending, [&](const VmmPending& f) {
            return !f.any_stream && f.stream == it->second.stream && f.p < it->first + it->second.bytes &&
                   it->first < f.p + f.bytes;
          });
        }
        queue(on, false);
        for (StreamHandle s : it->second.uses)
          if (s != on) queue(s, true);  // the freeing stream's own work is ordered anyway
        Check(v.DeallocateAsync(reinterpret_cast<void*>(it->first), on).ok(), "a live block frees");
        freed.push_back(it->first);
        live.erase(it);
        break;
      }
      case 6: {  // record_stream
        if (live.empty()) break;
        auto it = live.begin();
        std::advance(it, in.U8() % live.size());
        Check(v.RecordStream(reinterpret_cast<void*>(it->first), stream).ok(), "a live block records a stream");
        if (stream != it->second.stream) it->second.uses.push_back(stream);
        break;
      }
      case 7:  // the device finishes a stream's work, or everything
        if (op & 0x80)
          m.CompleteEvents();
        else
          m.CompleteEvents(stream);
        break;
      case 8: {  // empty_cache
        Result<std::uint64_t> released = v.ReleaseCachedMemory();
        Check(released.ok(), "empty_cache succeeds");
        for (const auto& [p, l] : live) Check(Intact(p, l), "empty_cache keeps the live blocks");
        break;
      }
      case 9: {  // memory limit: none, or from one granule up
        std::optional<std::uint64_t> limit;
        if (op & 0x80) limit = hp.granularity * (1 + in.U8() % 128);
        Check(v.SetMemoryLimit(limit).ok(), "a limit of at least a granule is taken");
        const Status low = v.SetMemoryLimit(hp.granularity - 1);
        Check(low.code() == StatusCode::kInvalidArgument, "a limit below a granule is refused");
        break;
      }
      case 10: {  // frees and records of what is not live
        int local = 0;
        void* bad = NotLivePointer((op & 0x80) ? 0 : 1, in, live, freed, &local);
        const std::uint64_t in_use = v.GetStats().bytes_in_use;
        const Status st = (op & 0x40) ? v.RecordStream(bad, stream) : v.DeallocateAsync(bad, stream);
        CheckRefused(st, in_use, v.GetStats().bytes_in_use, "a free or record of what is not live is an error");
        break;
      }
      default:
        Check(!v.MemoryReport(in.U8() % 8).empty(), "a report says something");
        break;
    }
  }
  for (const auto& [p, l] : live) {
    Check(Intact(p, l), "a block keeps its bytes until it is freed");
    Check(v.DeallocateAsync(reinterpret_cast<void*>(p), l.stream).ok(), "a live block frees at the end");
  }
  Result<std::uint64_t> released = v.ReleaseCachedMemory();
  Check(released.ok(), "empty_cache succeeds at the end");
  Check(v.GetStats().bytes_in_use == 0, "nothing is left in use");
  Check(m.granules_held() == 0, "every granule goes back");
  return allocations;
}

}  // namespace tensormem::fuzz
