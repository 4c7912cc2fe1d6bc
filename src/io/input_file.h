// Opening an input file, gzip-compressed or not: the stream decompresses as
// it is read (zlib), so a .csv.gz is read in place with bounded memory.
// Compression is recognised by its magic bytes, whatever the file's name.
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <utility>

#include "tensormem/status.h"

namespace tensormem::internal {

// NotFound naming the path when it cannot be opened.
Result<std::unique_ptr<std::istream>> OpenInputFile(const std::string& path);

// After reading a stream from OpenInputFile: InvalidArgument naming the path
// and zlib's reason when the gzip data was truncated or corrupt (the stream
// then simply ended early, so a reader alone could not tell); Ok otherwise.
Status InputFileError(const std::istream& in, const std::string& path);

// Opens `path`, runs `read(stream)` and returns its result, unless the gzip
// data was bad: that error comes first, as it explains the reader's.
template <typename Read>
auto ReadInputFile(const std::string& path, Read&& read) -> decltype(read(std::declval<std::istream&>())) {
  TM_ASSIGN_OR_RETURN(std::unique_ptr<std::istream> in, OpenInputFile(path));
  auto result = read(*in);
  if (Status error = InputFileError(*in, path); !error.ok()) return error;
  return result;
}

}  // namespace tensormem::internal
