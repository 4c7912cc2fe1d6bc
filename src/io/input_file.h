// SPDX-License-Identifier: Apache-2.0
// Opening an input file, gzip-compressed or not: the stream decompresses as
// it is read (zlib), so a .csv.gz is read in place with bounded memory.
// Compression is recognised by its magic bytes, whatever the file's name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "tensormem/io.h"
#include "tensormem/status.h"

namespace tensormem::internal {

// NotFound naming the path when it cannot be opened.
Result<std::unique_ptr<std::istream>> OpenInputFile(const std::string& path);

// A stream input (IsStreamInput in io.h: "-", a pipe, a device),
// gzip-compressed or not, opened once per path and kept until read: `stream`
// is valid, and no other thread reads it, while `keep` lives.
struct StreamInputHold {
  std::istream* stream = nullptr;
  std::shared_ptr<void> keep;
};
Result<StreamInputHold> HoldStreamInput(const std::string& path);
// Up to `max_bytes` of its bytes read ahead and not yet consumed (at most
// the 256 KiB buffer; empty at its end), or NotFound when it cannot be
// opened: the format is told from them before a reader takes the stream.
Result<std::string> PeekStreamInput(const std::string& path, std::size_t max_bytes);
// Closes a stream input once read, so that a named pipe opened again gets
// its next writer's data (standard input stays: read again, it is empty).
void ReleaseStreamInput(const std::string& path);

// After reading a stream from OpenInputFile: InvalidArgument naming the path
// and zlib's reason when the gzip data was truncated or corrupt (the stream
// then simply ended early, so a reader alone could not tell); Ok otherwise.
Status InputFileError(const std::istream& in, const std::string& path);

// What a regular file looked like before it was read (its identity, size
// and modification time), to tell whether it changed under the reader: a
// file truncated at a row boundary while read would be taken as a shorter,
// valid input.
struct FileSnapshot {
  bool taken = false;
  std::uint64_t device = 0, inode = 0, size = 0;
  std::int64_t mtime_ns = 0;
};
FileSnapshot SnapshotFile(const std::string& path);
// InvalidArgument "PATH: changed while it was read (...)" when the file
// `before` describes has another size or modification time now; Ok when it
// is unchanged, was replaced (a rename: the old file was read whole), or
// no snapshot was taken.
Status CheckUnchanged(const std::string& path, const FileSnapshot& before);

// Opens `path` ("-": standard input; a pipe or a device as a stream), runs `read(stream, source)` with the
// name messages give it ("<stdin>" for "-") and returns its result, unless
// the gzip data was bad: that error comes first, as it explains the reader's.
template <typename Read>
auto ReadInputFile(const std::string& path, Read&& read)
    -> decltype(read(std::declval<std::istream&>(), std::declval<const std::string&>())) {
  if (IsStreamInput(path)) {
    TM_ASSIGN_OR_RETURN(StreamInputHold hold, HoldStreamInput(path));
    const std::string source = InputName(path);
    auto result = read(*hold.stream, source);
    Status error = InputFileError(*hold.stream, source);
    ReleaseStreamInput(path);
    if (!error.ok()) return error;
    return result;
  }
  const FileSnapshot before = SnapshotFile(path);
  TM_ASSIGN_OR_RETURN(std::unique_ptr<std::istream> in, OpenInputFile(path));
  auto result = read(*in, path);
  if (Status error = InputFileError(*in, path); !error.ok()) return error;
  TM_RETURN_IF_ERROR(CheckUnchanged(path, before));
  return result;
}

}  // namespace tensormem::internal
