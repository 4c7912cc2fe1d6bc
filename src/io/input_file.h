// Opening an input file, gzip-compressed or not: the stream decompresses as
// it is read (zlib), so a .csv.gz is read in place with bounded memory.
// Compression is recognised by its magic bytes, whatever the file's name.
#pragma once

#include <istream>
#include <memory>
#include <string>

#include "tensormem/status.h"

namespace tensormem::internal {

// NotFound naming the path when it cannot be opened.
Result<std::unique_ptr<std::istream>> OpenInputFile(const std::string& path);

}  // namespace tensormem::internal
