// SPDX-License-Identifier: Apache-2.0
// Body of the buffer pool fuzzer (and of its seeded replay in
// allocators_test): what the allocator fuzzer does not reach, the pool's own
// calls, in any order the bytes give. Allocations, separate blocks and frees
// (every block aligned, disjoint from the live ones, its first and last byte
// kept until freed); frees of what is not live; barriers and groups (a call
// out of order is FailedPrecondition and changes nothing; a block freed in
// one group is not handed out outside it before BarrierEnd); Release of the
// free blocks or of all (then the old pointers are not live); and the defer
// mode: chunks recorded, freed, planned by DeferCompute with the bytes'
// strategy, their addresses written in the recorded order with a pattern
// each, checked when the chunk is freed and at the end (no two chunks live
// at once share a byte), the arena at least its lower bound, and Address
// refused before a plan and after DeferReset.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "allocator_fuzz_common.h"
#include "tensormem/allocators.h"

namespace tensormem::fuzz {

struct PoolChunk {
  DeferredChunk chunk;
  std::uint64_t bytes = 0;
  std::uint64_t alignment = 1;
  std::size_t allocated_at = 0;                       // event index
  std::optional<std::size_t> freed_at;                // event index
};

// Writes every recorded chunk's pattern in event order and checks it where
// the chunk is freed and at the end: chunks live at once do not overlap.
inline void CheckDeferredPlan(BufferPool& pool, const std::vector<PoolChunk>& chunks, std::size_t events) {
  std::vector<std::uint8_t*> at(chunks.size(), nullptr);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    Result<void*> a = pool.Address(chunks[i].chunk);
    Check(a.ok(), "every recorded chunk has an address once planned");
    at[i] = static_cast<std::uint8_t*>(*a);
    Check(reinterpret_cast<std::uintptr_t>(at[i]) % chunks[i].alignment == 0, "chunks are aligned as asked");
  }
  std::vector<std::vector<std::size_t>> allocated(events), freed(events);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    allocated[chunks[i].allocated_at].push_back(i);
    if (chunks[i].freed_at) freed[*chunks[i].freed_at].push_back(i);
  }
  auto pattern = [](std::size_t i, std::uint64_t k) { return static_cast<std::uint8_t>(i * 131 + k * 7 + 1); };
  auto chunk_intact = [&](std::size_t i) {
    for (std::uint64_t k = 0; k < chunks[i].bytes; ++k)
      if (at[i][k] != pattern(i, k)) return false;
    return true;
  };
  for (std::size_t e = 0; e < events; ++e) {
    for (std::size_t i : allocated[e])
      for (std::uint64_t k = 0; k < chunks[i].bytes; ++k) at[i][k] = pattern(i, k);
    for (std::size_t i : freed[e]) Check(chunk_intact(i), "a deferred chunk keeps its bytes until its free");
  }
  for (std::size_t i = 0; i < chunks.size(); ++i)
    if (!chunks[i].freed_at) Check(chunk_intact(i), "a chunk never freed keeps its bytes to the end");
  Check(pool.deferred_arena_bytes() >= pool.deferred_lower_bound(), "the arena is at least its bound");
}

constexpr int kMaxAlignmentLog2 = 12;
constexpr std::uint64_t kMaxAlignment = std::uint64_t{1} << kMaxAlignmentLog2;  // of Allocate here

// Returns the steps that succeeded.
inline int FuzzBufferPoolOne(const std::uint8_t* data, std::size_t size) {
  FuzzBytes in{data, size};
  BufferPoolParams params;
  params.split_granularity = std::uint64_t{1} << in.U8() % 12;
  const OffsetsStrategy strategies[] = {OffsetsStrategy::kGreedyBySize, OffsetsStrategy::kGreedyByBreadth,
                                        OffsetsStrategy::kGreedyInOrder, OffsetsStrategy::kArena,
                                        OffsetsStrategy::kBest,          OffsetsStrategy::kNaive};
  params.defer_strategy = strategies[in.U8() % 6];
  CappedBackend backend(HostBackend(), kCap);
  Result<std::unique_ptr<BufferPool>> created = BufferPool::Create(backend, params);
  Check(created.ok(), "valid pool parameters are accepted");
  BufferPool& pool = **created;

  struct Freed {
    std::uintptr_t p;
    std::uint64_t bytes;
    int group;
  };
  std::map<std::uintptr_t, LiveBlock> live;
  std::vector<std::uintptr_t> old;  // freed, or released with everything
  std::vector<Freed> group_freed;   // freed inside a group, this barrier
  bool barrier = false;
  int group = 0, groups = 0;  // 0: outside any group
  std::vector<PoolChunk> chunks;
  std::size_t events = 0;
  bool planned = false;
  std::uint8_t tag = 0;
  int done = 0;
  auto precondition = [](const Status& st) {
    Check(!st.ok() && st.code() == StatusCode::kFailedPrecondition && !st.message().empty(),
          "a call out of order is FailedPrecondition, with a message");
  };
  auto take = [&](Result<void*> a, std::uint64_t bytes, std::uint64_t alignment) {
    const std::uint64_t used = bytes == 0 ? 1 : bytes;
    const std::optional<std::uintptr_t> block = CheckedBlock(a, used, alignment, live);
    if (!block) return;
    const std::uintptr_t p = *block;
    // Bytes freed in a group: only that group takes them again before the
    // barrier ends. A group's list does not split, so what the group takes
    // is a whole freed block, no longer the group's (its next free may be
    // outside the group). Both that block's pointer then and this one lie
    // less than the largest alignment asked (kMaxAlignment) above its start,
    // so the group's records that close, or inside this block, are dropped.
    std::vector<Freed> kept;
    for (const Freed& f : group_freed) {
      if (f.group == group && f.p + kMaxAlignment > p && f.p < p + std::max(used, kMaxAlignment)) continue;
      Check(f.group == group || p + used <= f.p || f.p + f.bytes <= p,
            "a block freed in a group is not handed out outside it before BarrierEnd");
      kept.push_back(f);
    }
    group_freed = std::move(kept);
    TagBlock(p, used, ++tag);
    live[p] = LiveBlock{used, tag};
    ++done;
  };

  for (int step = 0; step < 300 && in.n > 0; ++step) {
    const std::uint8_t op = in.U8();
    switch (op % 16) {
      case 0:
      case 1:
      case 2: {
        const std::uint64_t bytes = (op & 0x80) ? in.Size() % (std::uint64_t{1} << 22) : in.U64(2);
        const std::uint64_t alignment = std::uint64_t{1} << in.U8() % (kMaxAlignmentLog2 + 1);
        take(pool.Allocate(bytes, alignment), bytes, alignment);
        break;
      }
      case 3: {
        const std::uint64_t bytes = (op & 0x80) ? in.Size() : in.U64(2);
        take(pool.AllocateSeparate(bytes, 64), bytes, 64);
        break;
      }
      case 4:
      case 5: {
        if (live.empty()) break;
        auto it = live.begin();
        std::advance(it, in.U8() % live.size());
        Check(Intact(it->first, it->second), "a block keeps its bytes until it is freed");
        Check(pool.Deallocate(reinterpret_cast<void*>(it->first)).ok(), "a live block frees");
        if (group != 0) group_freed.push_back({it->first, it->second.bytes, group});
        old.push_back(it->first);
        live.erase(it);
        ++done;
        break;
      }
      case 6: {  // a free of what is not live
        int local = 0;
        void* bad = NotLivePointer((op & 16) ? 0 : 1, in, live, old, &local);
        const std::uint64_t in_use = pool.GetStats().bytes_in_use;
        const Status st = pool.Deallocate(bad);
        CheckRefused(st, in_use, pool.GetStats().bytes_in_use, "a free of what is not live is an error");
        break;
      }
      case 7: {  // barriers and groups, in any order
        const std::uint8_t which = in.U8() % 4;
        if (which == 0) {
          const Status st = pool.BarrierBegin();
          if (barrier) precondition(st);
          Check(barrier || st.ok(), "BarrierBegin opens a barrier");
          barrier = true;
        } else if (which == 1) {
          const Status st = pool.BeginGroup();
          if (!barrier || group != 0) {
            precondition(st);
          } else {
            Check(st.ok(), "BeginGroup inside a barrier opens a group");
            group = ++groups;
          }
        } else if (which == 2) {
          const Status st = pool.EndGroup();
          if (group == 0) precondition(st);
          Check(group == 0 || st.ok(), "EndGroup ends the open group");
          group = 0;
        } else {
          const Status st = pool.BarrierEnd();
          if (!barrier || group != 0) {
            precondition(st);
          } else {
            Check(st.ok(), "BarrierEnd closes the barrier");
            barrier = false;
            group_freed.clear();
          }
        }
        ++done;
        break;
      }
      case 8:
      case 9: {  // Release: of the free blocks; one time in four of everything
        const bool all = (op & 48) == 48;
        const std::uint64_t in_use = pool.GetStats().bytes_in_use;
        Result<std::uint64_t> r = pool.Release(all ? PoolRelease::kAll : PoolRelease::kOnlyFree);
        if (barrier) {
          precondition(r.status());
          break;
        }
        Check(r.ok(), "Release outside a barrier succeeds");
        if (all) {
          for (const auto& [p, l] : live) old.push_back(p);
          live.clear();
          planned = false;  // the arena went back too
          Check(pool.GetStats().bytes_in_use == 0, "Release(kAll) leaves nothing in use");
        } else {
          Check(pool.GetStats().bytes_in_use == in_use, "Release(kOnlyFree) keeps every live block");
          for (const auto& [p, l] : live) Check(Intact(p, l), "Release(kOnlyFree) keeps their bytes");
        }
        ++done;
        break;
      }
      case 10:
      case 11: {  // record a chunk
        const std::uint64_t bytes = in.U64(2) % 4096;
        const std::uint64_t alignment = std::uint64_t{1} << in.U8() % 9;
        Result<DeferredChunk> c = pool.DeferAllocate(bytes, alignment);
        if (!c.ok()) {
          Check(!c.status().message().empty(), "a refused chunk says why");
          break;
        }
        chunks.push_back({*c, bytes, alignment, events++, std::nullopt});
        Check(!pool.Address(*c).ok() || !planned, "a chunk recorded after a plan waits for the next");
        ++done;
        break;
      }
      case 12: {  // free a recorded chunk (or one freed already: an error)
        if (chunks.empty()) break;
        PoolChunk& c = chunks[in.U8() % chunks.size()];
        const Status st = pool.DeferFree(c.chunk);
        if (c.freed_at) {
          Check(!st.ok() && !st.message().empty(), "a chunk freed twice is an error");
        } else {
          Check(st.ok(), "a recorded chunk frees");
          c.freed_at = events++;
        }
        break;
      }
      case 13: {  // a chunk never recorded
        const Status st = pool.DeferFree(DeferredChunk{chunks.size() + 1 + in.U8()});
        Check(!st.ok() && !st.message().empty(), "an unknown chunk is an error");
        if (!planned && !chunks.empty())
          Check(!pool.Address(chunks.front().chunk).ok(), "no address before a plan");
        break;
      }
      case 14: {  // plan
        const Status st = pool.DeferCompute();
        if (!st.ok()) {
          Check(st.code() == StatusCode::kResourceExhausted && !st.message().empty(),
                "DeferCompute fails only for want of memory");
          planned = false;
          break;
        }
        planned = true;
        CheckDeferredPlan(pool, chunks, events);
        ++done;
        break;
      }
      default: {  // forget the recorded chunks
        Check(pool.DeferReset().ok(), "DeferReset succeeds");
        for (const PoolChunk& c : chunks)
          Check(!pool.Address(c.chunk).ok(), "no address for a chunk forgotten by DeferReset");
        chunks.clear();
        events = 0;
        planned = false;
        break;
      }
    }
  }
  Check(pool.DeferReset().ok(), "DeferReset succeeds");  // the arena is in use until then
  if (group != 0) Check(pool.EndGroup().ok(), "the open group ends");
  if (barrier) Check(pool.BarrierEnd().ok(), "the open barrier ends");
  for (const auto& [p, l] : live) {
    Check(Intact(p, l), "a block keeps its bytes until it is freed");
    Check(pool.Deallocate(reinterpret_cast<void*>(p)).ok(), "a live block frees at the end");
  }
  Check(pool.GetStats().bytes_in_use == 0, "nothing is left in use");
  return done;
}

}  // namespace tensormem::fuzz
