// SPDX-License-Identifier: Apache-2.0
// Body of the trace fuzzer (and of its corpus replay in io_test): whatever
// the bytes, ReadTrace returns a trace or an error with a message. An
// accepted trace pairs every free with a live earlier allocation of the same
// pointer and size, its planning problem is well formed and plans to offsets
// the validator accepts, and replaying it through bfc (a host backend capped
// at 64 MiB) and vmm (host granules, a 64 MiB limit) gives every block back,
// with its first and last byte intact, or answers out of memory with a
// message: never a crash or another error.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "reader_fuzz_common.h"
#include "tensormem/allocators.h"
#include "tensormem/trace.h"

namespace tensormem::fuzz {

inline void CheckReplay(const Trace& trace, MemoryResource& r) {
  std::vector<void*> slots(trace.events.size(), nullptr);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.action == TraceAction::kAllocate) {
      Result<void*> p = r.Allocate(e.size);
      if (!p.ok()) {
        Check(p.status().code() == StatusCode::kResourceExhausted ||
                  p.status().code() == StatusCode::kInvalidArgument,
              "an allocation fails only for want of memory or an impossible size");
        Check(!p.status().message().empty(), "allocation errors carry a message");
        continue;
      }
      slots[i] = *p;
      if (e.size > 0) {  // the first and the last byte (one byte for a block of one)
        auto* bytes = static_cast<unsigned char*>(*p);
        bytes[0] = bytes[e.size - 1] = static_cast<unsigned char>(i);
      }
    } else {
      void* p = slots[e.partner];
      if (p == nullptr) continue;  // its allocation failed
      if (trace.events[e.partner].size > 0) {
        const auto* bytes = static_cast<const unsigned char*>(p);
        Check(bytes[0] == static_cast<unsigned char>(e.partner) &&
                  bytes[trace.events[e.partner].size - 1] == static_cast<unsigned char>(e.partner),
              "a block keeps its bytes until it is freed");
      }
      Check(r.Deallocate(p).ok(), "a live block frees");
      slots[e.partner] = nullptr;
    }
  }
  for (void* p : slots)
    if (p != nullptr) Check(r.Deallocate(p).ok(), "a block never freed in the trace frees at the end");
  Check(r.GetStats().bytes_in_use == 0, "nothing is left in use");
}

inline int FuzzTraceOne(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  ReadLimits limits;
  limits.max_buffers = 2000;  // keep each run fast
  Result<Trace> trace = ReadTrace(in, "fuzz.csv", limits);
  if (!trace.ok()) {
    Check(!trace.status().message().empty(), "errors carry a message");
    return 0;
  }
  const std::vector<TraceEvent>& ev = trace->events;
  Check(ev.size() == trace->num_allocations + trace->num_frees, "every event is an allocation or a free");
  std::uint64_t never_freed = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    if (e.action == TraceAction::kAllocate) {
      if (e.partner == kNoTraceEvent) {
        ++never_freed;
        continue;
      }
      Check(e.partner > i && e.partner < ev.size(), "a free comes after its allocation");
      const TraceEvent& f = ev[e.partner];
      Check(f.action == TraceAction::kFree && f.partner == i && f.pointer == e.pointer && f.size == e.size,
            "an allocation and its free name each other, the pointer and the size");
    } else {
      Check(e.partner < i && ev[e.partner].action == TraceAction::kAllocate && ev[e.partner].partner == i,
            "a free names an earlier allocation");
    }
  }
  Check(never_freed == trace->num_never_freed, "blocks never freed are counted");

  const Problem problem = TraceToProblem(*trace);
  Check(CheckProblem(problem).ok(), "a trace's problem is well formed");
  Check(problem.buffers.size() == trace->num_allocations, "one buffer per allocation");
  Result<OffsetsPlan> plan = PlanOffsets(problem, OffsetsStrategy::kGreedyBySize, PlanParams{});
  if (plan.ok()) {
    Check(ValidateOffsetsPlan(problem, *plan, 1, false).ok(), "plans validate");
  } else {
    Check(plan.status().code() == StatusCode::kOutOfRange, "only overflow may stop planning");
  }

  constexpr std::uint64_t kCapacity = std::uint64_t{64} << 20;
  {
    CappedBackend capped(HostBackend(), kCapacity);
    Result<std::unique_ptr<BfcAllocator>> bfc = BfcAllocator::Create(capped);
    Check(bfc.ok(), "bfc starts");
    CheckReplay(*trace, **bfc);
  }
  {
    Result<std::unique_ptr<HostPhysicalMemory>> memory = HostPhysicalMemory::Create();
    if (!memory.ok()) return 0;  // no memfd here: nothing to replay on
    VmmParams params;
    params.memory_limit = kCapacity;
    Result<std::unique_ptr<VmmAllocator>> vmm = VmmAllocator::Create(**memory, params);
    Check(vmm.ok(), "vmm starts");
    CheckReplay(*trace, **vmm);
  }
  return 0;
}

}  // namespace tensormem::fuzz
