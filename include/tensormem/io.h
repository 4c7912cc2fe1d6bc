// SPDX-License-Identifier: Apache-2.0
// File formats: the edge where half-open spans become inclusive lifetimes.
//
// MiniMalloc CSV: header `id,lower,upper,size` with optional `alignment`,
// `offset` (fixed on input, the answer on output) and `gaps`
// (space-separated `L-U` or `L-U@lo:hi`); `begin` is accepted for `lower`;
// spans are half-open [lower, upper); an `end` column instead of `upper` is
// inclusive. Columns may come in any order; unknown columns are an error.
//
// JSON: {"buffers": [{"id", "lower", "upper" | "end", "size", "alignment",
// "offset", "gaps": [{"lower", "upper", "window": [lo, hi]}]}], "capacity"}
// (a bare array of buffers is accepted), and on output a "plan" object with
// the metadata (strategy, total, lower_bound, ratio, seconds).
//
// Every error names the source, the line (CSV) or buffer index (JSON), and
// the field.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensormem/problem.h"
#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem {

struct ReadLimits {
  // Refuse inputs with more buffers than this (bounds memory on hostile input).
  std::uint64_t max_buffers = 50'000'000;
};

Result<Problem> ReadProblemCsv(std::istream& in, std::string_view source,
                               const ReadLimits& limits = {});
Result<Problem> ReadProblemJson(std::istream& in, std::string_view source,
                                const ReadLimits& limits = {});

// The problem as CSV (half-open lower/upper), with an `offset` column holding
// the plan's offsets when `plan` is given (else fixed offsets, if any).
Status WriteProblemCsv(std::ostream& out, const Problem& problem,
                       const OffsetsPlan* plan = nullptr);
// The problem as CSV with an `object` column (the object id of each buffer).
Status WriteObjectsCsv(std::ostream& out, const Problem& problem, const ObjectsPlan& plan);
// The problem as JSON, with the offsets and the plan's metadata when given.
Status WriteProblemJson(std::ostream& out, const Problem& problem,
                        const OffsetsPlan* plan = nullptr);

enum class InputFormat { kCsv, kJson, kTrace, kOnnx };

// Decides by content (JSON starts with '{' or '['; a trace CSV has the header
// Thread,Time,Action,...; ONNX is binary protobuf) and falls back to the
// extension. Trace and ONNX inputs are read by their own modules. "-" is
// standard input (gzip-compressed or not), looked at without consuming it.
// A stream named *.onnx is kOnnx unopened (a pipe with no writer would
// block, and models are not read from streams).
Result<InputFormat> DetectInputFormat(const std::string& path);

// Called when a blocking open or read of a stream input (a pipe, a
// terminal) is interrupted by a signal: returning true stops it, the read
// failing with "interrupted". Bindings use it for Ctrl-C (Python checks its
// signals here); none is set by default (the read goes on). Process-wide.
void SetInputInterruptCheck(bool (*check)());

// Reads a CSV or JSON planning problem, or an allocation trace as one (see
// trace.h), from a file, gzip-compressed or not ("-" = standard input, any
// of these; messages call it <stdin>; a pipe is read as a stream too).
Result<Problem> LoadProblem(const std::string& path, const ReadLimits& limits = {});

// An input as messages and reports name it: "<stdin>" for "-", else the path.
std::string InputName(const std::string& path);
// Whether `path` is read as a stream, once, from its start: "-" (standard
// input) and whatever exists and is neither a regular file nor a directory
// (a pipe, a process substitution's /dev/fd/N, a device). Such an input is
// opened once per process, and its format told from the bytes read ahead.
bool IsStreamInput(const std::string& path);
// InvalidArgument for an ONNX model given as a stream (IsStreamInput):
// models are read from their files (the importer takes a path), so the
// message asks for one.
Status OnnxNotFromAFileError(const std::string& path);

// Writes the file `path` through `write`, whole or not at all: into a
// temporary file beside it, renamed into place only when everything was
// written, so a failed write (a full disk, an error from `write`) leaves any
// old file as it was and no temporary one. A file a rename could not keep
// (one with other hard links, or owned by a user or group the writer cannot
// give) is written in place from a whole copy in memory: an error from
// `write` leaves it as it was; a write that fails midway (a full disk) puts
// the old content back, and the error ends "the file keeps its old content"
// or, when even that fails, "the file is left partly written". A device or
// pipe is written to as a stream. A directory is refused
// (InvalidArgument "PATH: is a directory, not a file") before anything is
// written; a file that cannot be created is NotFound with the system's reason.
Status WriteFileWhole(const std::string& path, const std::function<Status(std::ostream&)>& write);

// A plan's offsets by buffer id, from a file: a CSV whose header is exactly
// `id` and `offset` (in either order), or any problem LoadProblem reads with
// an offset on every buffer (what `solve --out` and `plan --out` write).
// Errors name the file, the line or buffer, and the field.
struct IdOffset {
  std::string id;
  std::uint64_t offset = 0;
};
Result<std::vector<IdOffset>> LoadOffsets(const std::string& path, const ReadLimits& limits = {});

struct SvgOptions {
  std::string title;
  std::uint64_t lower_bound = 0;  // drawn as a horizontal line when > 0
  int width = 1200;
  int height = 700;
};

// A memory map: x = task, y = address, one rectangle per buffer (one per
// occupancy segment when it has gaps), a tooltip with id, size, lifetime
// and offset, and the lower bound as a dashed line.
Status WriteSvg(std::ostream& out, const Problem& problem, const OffsetsPlan& plan,
                const SvgOptions& options = {});

struct HtmlMapOptions {
  std::string title;
  std::uint64_t lower_bound = 0;  // drawn as a dashed line when > 0
  std::string x_label = "task";   // what x counts ("event" for a replay)
  // Optional: bytes an allocator held after each x (x = 0, 1, 2, ...),
  // drawn as a step line (a replay's reserved bytes over time).
  std::vector<std::uint64_t> reserved;
};

// An interactive memory map as one self-contained HTML file (inline script,
// no network): x = task, y = address, one rectangle per buffer (per
// occupancy segment when it has gaps) drawn on a canvas, so 10^5 buffers
// stay responsive; hover names the buffer (id, size, lifetime, offset); the
// wheel zooms, dragging pans, a double click resets; the lower bound, the
// plan's total and the reserved bytes are lines. The page writes its own
// summary (buffers drawn, total) into the element #summary once drawn.
Status WriteHtmlMap(std::ostream& out, const Problem& problem, const OffsetsPlan& plan,
                    const HtmlMapOptions& options = {});

}  // namespace tensormem
