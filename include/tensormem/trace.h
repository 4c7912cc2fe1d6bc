// SPDX-License-Identifier: Apache-2.0
// Allocation traces: the CSV of the RAPIDS memory manager's replay log,
// `Thread,Time,Action,Pointer,Size,Stream` (columns in any order, names case-
// insensitive, Stream optional). Action is `allocate` or `free` (`allocate
// failure` lines are counted and skipped: they changed nothing); Pointer is
// hex (0x...) or decimal; Time is microseconds (an integer, or RMM's
// h:m:s:us); a free names the pointer of a live earlier allocation and,
// when its Size is not 0, the same size.
//
// Every error names the file, the line and the field. A free of a pointer
// that is not live is an error naming its line; blocks still allocated when
// the trace ends are fine (they live to the end).
//
// A trace is also a planning problem: each allocation is a buffer live from
// its allocate event to its free event (inclusive), events numbered 0, 1, 2,
// ... in file order as tasks; a block never freed lives to the last event.
// The buffer's id is "line<N>", N the line of its allocate event.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "tensormem/io.h"
#include "tensormem/problem.h"
#include "tensormem/status.h"

namespace tensormem {

enum class TraceAction : std::uint8_t { kAllocate, kFree };

inline constexpr std::uint64_t kNoTraceEvent = ~std::uint64_t{0};

struct TraceEvent {
  TraceAction action = TraceAction::kAllocate;
  std::uint64_t pointer = 0;  // the address the traced allocator returned
  std::uint64_t size = 0;     // bytes (for a free: the allocation's size)
  std::uint64_t time_us = 0;
  std::uint64_t thread = 0;
  std::uint64_t stream = 0;
  std::uint64_t line = 0;  // 1-based line in the file
  // allocate: index of the matching free event, or kNoTraceEvent when the
  // block is never freed; free: index of the matching allocate event.
  std::uint64_t partner = kNoTraceEvent;
};

struct Trace {
  std::string source;
  std::vector<TraceEvent> events;
  std::uint64_t num_allocations = 0;
  std::uint64_t num_frees = 0;
  std::uint64_t num_failed_allocations = 0;  // `allocate failure` lines skipped
  std::uint64_t num_never_freed = 0;
};

// Limits bound memory on hostile input (max_buffers bounds the events).
Result<Trace> ReadTrace(std::istream& in, std::string_view source, const ReadLimits& limits = {});
// "-" reads standard input (gzip-compressed or not).
Result<Trace> LoadTrace(const std::string& path, const ReadLimits& limits = {});

// The planning problem of a trace (see above); alignment 1 for every buffer.
Problem TraceToProblem(const Trace& trace);

// Reads a trace straight into its planning problem (what LoadProblem does
// for trace files).
Result<Problem> ReadTraceProblem(std::istream& in, std::string_view source,
                                 const ReadLimits& limits = {});

}  // namespace tensormem
