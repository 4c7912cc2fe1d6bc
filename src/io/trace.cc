// SPDX-License-Identifier: Apache-2.0
// Allocation traces (RAPIDS replay-log CSV), read and turned into planning
// problems. The reader pairs every free with its allocate as it goes (a
// hash map of live pointers), so a replay needs no lookups of its own.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <unordered_map>

#include "io/text_util.h"
#include "tensormem/trace.h"

#include "io/input_file.h"

namespace tensormem {
namespace {

enum Column { kThread, kTime, kAction, kPointer, kSize, kStream, kNumColumns };
constexpr std::array<std::string_view, kNumColumns> kColumnNames = {"Thread", "Time",    "Action",
                                                                    "Pointer", "Size", "Stream"};

// Decimal, or hexadecimal with a 0x prefix.
bool ParseNumber(std::string_view s, std::uint64_t* out, std::string* error) {
  s = io::Trim(s);
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
    if (ec == std::errc::result_out_of_range) {
      *error = "too large for 64 bits";
      return false;
    }
    if (ec != std::errc() || p != s.data() + s.size()) {
      *error = "not a hexadecimal number";
      return false;
    }
    return true;
  }
  io::IntParse r = io::ParseUnsigned(s);
  if (!r.ok) {
    *error = r.error;
    return false;
  }
  *out = r.value;
  return true;
}

// Microseconds: an integer, or RMM's h:m:s:us (also h:m:s.us).
bool ParseTime(std::string_view s, std::uint64_t* out, std::string* error) {
  s = io::Trim(s);
  if (s.find_first_of(":.") == std::string_view::npos) return ParseNumber(s, out, error);
  std::array<std::uint64_t, 4> parts{};
  std::size_t n = 0;
  while (true) {
    const std::size_t sep = s.find_first_of(":.");
    const std::string_view part = s.substr(0, sep);
    io::IntParse r = io::ParseUnsigned(part);
    if (!r.ok || n == parts.size()) {
      *error = "not a time (expected microseconds, or h:m:s:us)";
      return false;
    }
    parts[n++] = r.value;
    if (sep == std::string_view::npos) break;
    s.remove_prefix(sep + 1);
  }
  if (n != 4 || parts[0] > 1'000'000 || parts[1] > 59 || parts[2] > 59 || parts[3] > 999'999) {
    *error = "not a time (expected microseconds, or h:m:s:us)";
    return false;
  }
  *out = ((parts[0] * 60 + parts[1]) * 60 + parts[2]) * 1'000'000 + parts[3];
  return true;
}

class TraceReader {
 public:
  TraceReader(std::string_view source, const ReadLimits& limits) : source_(source), limits_(limits) {}

  Result<Trace> Read(std::istream& in) {
    Trace trace;
    trace.source = std::string(source_);
    io::CsvLines lines(in, source_);
    std::vector<std::string_view> fields;
    bool have_header = false;
    while (true) {
      TM_ASSIGN_OR_RETURN(const bool more, lines.Next(&fields, have_header ? header_size_ : 0));
      if (!more) break;
      line_no_ = lines.line();
      if (!have_header) {
        TM_RETURN_IF_ERROR(ReadHeader(fields));
        have_header = true;
        continue;
      }
      if (io::EqualsIgnoringCase(io::Trim(Field(fields, kAction)), "allocate failure")) {
        ++trace.num_failed_allocations;
        continue;
      }
      TM_ASSIGN_OR_RETURN(TraceEvent e, ParseEvent(fields));
      if (trace.events.size() >= limits_.max_buffers)
        return Error("more than " + std::to_string(limits_.max_buffers) + " events");
      TM_RETURN_IF_ERROR(e.action == TraceAction::kAllocate ? Allocate(e, trace) : Free(e, trace));
      trace.events.push_back(e);
    }
    if (!have_header)
      return InvalidArgument(std::string(source_) +
                             ": empty file: expected the header Thread,Time,Action,Pointer,Size,Stream");
    trace.num_never_freed = live_.size();
    return trace;
  }

 private:
  // The line's event, its fields checked (not yet paired).
  Result<TraceEvent> ParseEvent(const std::vector<std::string_view>& fields) const {
    const std::string_view action = io::Trim(Field(fields, kAction));
    TraceEvent e;
    e.line = line_no_;
    if (io::EqualsIgnoringCase(action, "allocate")) {
      e.action = TraceAction::kAllocate;
    } else if (io::EqualsIgnoringCase(action, "free")) {
      e.action = TraceAction::kFree;
    } else {
      return FieldError(kAction, "unknown action " + io::Quote(Field(fields, kAction)) +
                                     " (expected allocate or free)");
    }
    TM_RETURN_IF_ERROR(Number(fields, kPointer, &e.pointer));
    TM_RETURN_IF_ERROR(Number(fields, kSize, &e.size));
    if (where_[kThread] >= 0) TM_RETURN_IF_ERROR(Number(fields, kThread, &e.thread));
    if (where_[kStream] >= 0 && !io::Trim(Field(fields, kStream)).empty())
      TM_RETURN_IF_ERROR(Number(fields, kStream, &e.stream));
    std::string error;
    if (where_[kTime] >= 0 && !ParseTime(Field(fields, kTime), &e.time_us, &error))
      return FieldError(kTime, error + ": " + io::Quote(Field(fields, kTime)));
    return e;
  }

  // An allocation, the next event of `trace`: its pointer must not be live.
  Status Allocate(const TraceEvent& e, Trace& trace) {
    if (e.pointer == 0) return FieldError(kPointer, "an allocation at the null pointer");
    auto [it, inserted] = live_.emplace(e.pointer, trace.events.size());
    if (!inserted)
      return FieldError(kPointer, Hex(e.pointer) + " is allocated again while still live (allocated on line " +
                                      std::to_string(trace.events[it->second].line) + " and not freed)");
    ++trace.num_allocations;
    return Status::Ok();
  }

  // A free, the next event of `trace`: of a live pointer (its size, when
  // given, the allocation's), paired with its allocation.
  Status Free(TraceEvent& e, Trace& trace) {
    auto it = live_.find(e.pointer);
    if (it == live_.end())
      return FieldError(kPointer, "free of " + Hex(e.pointer) +
                                      ", which is not live (never allocated, or already freed)");
    TraceEvent& a = trace.events[it->second];
    if (e.size != 0 && e.size != a.size)
      return FieldError(kSize, "free of " + std::to_string(e.size) + " bytes, but the allocation on line " +
                                   std::to_string(a.line) + " was " + std::to_string(a.size) + " bytes");
    e.size = a.size;
    e.partner = it->second;
    a.partner = trace.events.size();
    live_.erase(it);
    ++trace.num_frees;
    return Status::Ok();
  }

  static std::string Hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
  }
  Status Error(const std::string& what) const {
    return InvalidArgument(std::string(source_) + ":" + std::to_string(line_no_) + ": " + what);
  }
  Status FieldError(Column c, const std::string& what) const {
    return Error("field '" + std::string(kColumnNames[c]) + "': " + what);
  }
  std::string_view Field(const std::vector<std::string_view>& f, Column c) const {
    return f[static_cast<std::size_t>(where_[c])];
  }
  Status Number(const std::vector<std::string_view>& f, Column c, std::uint64_t* out) const {
    std::string error;
    if (!ParseNumber(Field(f, c), out, &error))
      return FieldError(c, error + ": " + io::Quote(Field(f, c)));
    return Status::Ok();
  }

  Status ReadHeader(const std::vector<std::string_view>& fields) {
    where_.fill(-1);
    header_size_ = fields.size();
    for (std::size_t k = 0; k < fields.size(); ++k) {
      int col = -1;
      for (int c = 0; c < kNumColumns; ++c)
        if (io::EqualsIgnoringCase(kColumnNames[static_cast<std::size_t>(c)], fields[k])) col = c;
      if (col < 0)
        return Error("unknown column " + io::Quote(fields[k]) +
                     " (a trace has Thread,Time,Action,Pointer,Size,Stream)");
      if (where_[static_cast<std::size_t>(col)] >= 0)
        return Error("column " + io::Quote(fields[k]) + " appears twice");
      where_[static_cast<std::size_t>(col)] = static_cast<int>(k);
    }
    for (Column c : {kAction, kPointer, kSize})
      if (where_[c] < 0)
        return Error("missing column '" + std::string(kColumnNames[c]) +
                     "' (a trace has Thread,Time,Action,Pointer,Size,Stream)");
    return Status::Ok();
  }

  std::string_view source_;
  ReadLimits limits_;
  std::size_t line_no_ = 0;
  std::size_t header_size_ = 0;
  std::array<int, kNumColumns> where_{};
  std::unordered_map<std::uint64_t, std::uint64_t> live_;  // pointer -> its allocate event
};

}  // namespace

Result<Trace> ReadTrace(std::istream& in, std::string_view source, const ReadLimits& limits) {
  return TraceReader(source, limits).Read(in);
}

Result<Trace> LoadTrace(const std::string& path, const ReadLimits& limits) {
  return internal::ReadInputFile(
      path, [&](std::istream& in, const std::string& source) { return ReadTrace(in, source, limits); });
}

Problem TraceToProblem(const Trace& trace) {
  Problem problem;
  problem.buffers.reserve(trace.num_allocations);
  const TaskIndex last = trace.events.empty() ? 0 : static_cast<TaskIndex>(trace.events.size() - 1);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.action != TraceAction::kAllocate) continue;
    Buffer b;
    b.id = "line" + std::to_string(e.line);
    b.size = e.size;
    b.first_task = static_cast<TaskIndex>(i);
    b.last_task = e.partner == kNoTraceEvent ? last : static_cast<TaskIndex>(e.partner);
    problem.buffers.push_back(std::move(b));
  }
  return problem;
}

Result<Problem> ReadTraceProblem(std::istream& in, std::string_view source, const ReadLimits& limits) {
  TM_ASSIGN_OR_RETURN(Trace trace, ReadTrace(in, source, limits));
  return TraceToProblem(trace);
}

}  // namespace tensormem
